#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include "stream/cross_library.h"

std::optional<cudaStream_t> trtet_caller_stream_in_reader_library() {
  return torch_tensorrt::executorch_backend::caller_stream();
}
