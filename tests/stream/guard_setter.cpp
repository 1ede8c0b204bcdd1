#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include "stream/cross_library.h"

void trtet_with_guard_in_setter_library(cudaStream_t stream, const std::function<void()>& body) {
  torch_tensorrt::executorch_backend::CudaStreamGuard guard(stream);
  body();
}
