// The per-thread caller-stream selection. This translation unit is the only definition of the
// thread-local, and it is compiled into exactly one shared library.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

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
