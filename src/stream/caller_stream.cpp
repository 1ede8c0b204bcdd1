// The per-thread caller-stream selection. This translation unit is the only definition of the
// selection in this project, and it is compiled into exactly one shared library.
//
// Note [Shared caller stream]
// ExecuTorch's CUDA stream extension (executorch/extension/cuda/caller_stream.h, the shared
// library executorch::extension_cuda) has the same contract as CudaStreamGuard: a per-thread,
// nestable selection restored on scope exit, read with getCallerStream(). When this library is
// built against an ExecuTorch that ships it (TRTET_EXECUTORCH_CALLER_STREAM), there is one
// selection per thread, ExecuTorch's: CudaStreamGuard constructs ExecuTorch's CallerStreamGuard in
// place (in the storage of its `previous_` member, which has the same layout: one
// std::optional<cudaStream_t>), and caller_stream() reads getCallerStream(). So either guard drives
// this delegate and ExecuTorch's CUDA delegate alike, and guards of both kinds nest. Without the
// extension, the thread-local below stands alone.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#if defined(TRTET_EXECUTORCH_CALLER_STREAM) && TRTET_EXECUTORCH_CALLER_STREAM
#include <executorch/extension/cuda/caller_stream.h>

#include <new>

namespace torch_tensorrt::executorch_backend {
namespace {

using ExecuTorchGuard = ::executorch::extension::cuda::CallerStreamGuard;
using Selection = std::optional<cudaStream_t>;

}  // namespace

CudaStreamGuard::CudaStreamGuard(cudaStream_t stream) noexcept : stream_(stream) {
  static_assert(sizeof(ExecuTorchGuard) <= sizeof(Selection) && alignof(ExecuTorchGuard) <= alignof(Selection),
                "ExecuTorch's CallerStreamGuard no longer fits in CudaStreamGuard::previous_");
  // ExecuTorch's guard saves the previous selection itself and selects `stream`.
  ::new (static_cast<void*>(&previous_)) ExecuTorchGuard(stream);
}

CudaStreamGuard::~CudaStreamGuard() {
  std::launder(reinterpret_cast<ExecuTorchGuard*>(&previous_))->~ExecuTorchGuard();  // restores
  ::new (static_cast<void*>(&previous_)) Selection();  // the member's own type again for its (trivial) destructor
}

std::optional<cudaStream_t> caller_stream() noexcept { return ::executorch::extension::cuda::getCallerStream(); }

}  // namespace torch_tensorrt::executorch_backend

#else  // the project's own selection

namespace torch_tensorrt::executorch_backend {
namespace {

thread_local std::optional<cudaStream_t> t_selected;

}  // namespace

CudaStreamGuard::CudaStreamGuard(cudaStream_t stream) noexcept : stream_(stream), previous_(t_selected) {
  t_selected = stream;
}

CudaStreamGuard::~CudaStreamGuard() { t_selected = previous_; }

std::optional<cudaStream_t> caller_stream() noexcept { return t_selected; }

}  // namespace torch_tensorrt::executorch_backend

#endif
