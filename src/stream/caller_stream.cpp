// The per-thread caller-stream selection. This translation unit is the only definition of the
// selection in this project, and it is compiled into exactly one shared library.
//
// Note [Shared caller stream]
// ExecuTorch's CUDA stream extension (executorch/extension/cuda/caller_stream.h, the shared
// library executorch::extension_cuda) has the same contract as CudaStreamGuard: a per-thread,
// nestable selection restored on scope exit, read with getCallerStream(). When this library is
// built against an ExecuTorch that ships it (TRTET_EXECUTORCH_CALLER_STREAM), there is one
// selection per thread, ExecuTorch's: CudaStreamGuard constructs ExecuTorch's CallerStreamGuard in
// its opaque `restore_` storage, and caller_stream() reads getCallerStream(). So either guard drives
// this delegate and ExecuTorch's CUDA delegate alike, and guards of both kinds nest. Without the
// extension, the thread-local below stands alone.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#if defined(TRTET_EXECUTORCH_CALLER_STREAM) && TRTET_EXECUTORCH_CALLER_STREAM
#include <executorch/extension/cuda/caller_stream.h>

#include <new>

namespace torch_tensorrt::executorch_backend {
namespace {

using ExecuTorchGuard = ::executorch::extension::cuda::CallerStreamGuard;

}  // namespace

CudaStreamGuard::CudaStreamGuard(cudaStream_t stream) noexcept : stream_(stream) {
  static_assert(sizeof(ExecuTorchGuard) <= sizeof(restore_) && alignof(ExecuTorchGuard) <= alignof(std::max_align_t),
                "ExecuTorch's CallerStreamGuard no longer fits in CudaStreamGuard::restore_");
  // ExecuTorch's guard saves the previous selection itself and selects `stream`.
  ::new (static_cast<void*>(restore_)) ExecuTorchGuard(stream);
}

CudaStreamGuard::~CudaStreamGuard() {
  std::launder(reinterpret_cast<ExecuTorchGuard*>(restore_))->~ExecuTorchGuard();  // restores
}

std::optional<cudaStream_t> caller_stream() noexcept { return ::executorch::extension::cuda::getCallerStream(); }

}  // namespace torch_tensorrt::executorch_backend

#else  // the project's own selection

#include <new>

namespace torch_tensorrt::executorch_backend {
namespace {

using Selection = std::optional<cudaStream_t>;
thread_local Selection t_selected;

Selection& saved(unsigned char* storage) { return *std::launder(reinterpret_cast<Selection*>(storage)); }

}  // namespace

CudaStreamGuard::CudaStreamGuard(cudaStream_t stream) noexcept : stream_(stream) {
  static_assert(sizeof(Selection) <= sizeof(restore_), "the saved selection must fit CudaStreamGuard::restore_");
  ::new (static_cast<void*>(restore_)) Selection(t_selected);
  t_selected = stream;
}

CudaStreamGuard::~CudaStreamGuard() {
  t_selected = saved(restore_);
  saved(restore_).~Selection();
}

std::optional<cudaStream_t> caller_stream() noexcept { return t_selected; }

}  // namespace torch_tensorrt::executorch_backend

#endif
