#include "common/gpu.h"

#include "cuda/device.h"

namespace trtet_test {

const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    auto count = torch_tensorrt::executorch_backend::cuda::device_count();
    return count.ok() ? std::string() : count.status().message();
  }();
  return reason;
}

}  // namespace trtet_test
