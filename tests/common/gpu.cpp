#include "common/gpu.h"

#include <cstdlib>
#include <cstring>

#include "cuda/device.h"

namespace trtet_test {

const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    auto count = torch_tensorrt::executorch_backend::cuda::device_count();
    return count.ok() ? std::string() : count.status().message();
  }();
  return reason;
}

bool under_sanitizer() {
  const char* flag = std::getenv("TRTET_UNDER_SANITIZER");
  if (flag != nullptr && std::strcmp(flag, "1") == 0) return true;
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  return injection != nullptr && std::strstr(injection, "sanitizer") != nullptr;
}

}  // namespace trtet_test
