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

std::string sanitizer_tool() {
  const char* tool = std::getenv("TRTET_SANITIZER_TOOL");
  return tool != nullptr ? std::string(tool) : std::string();
}

bool green_contexts_unsupported_here() {
  const char* forced = std::getenv("TRTET_INITCHECK_GREEN");
  if (forced != nullptr && std::strcmp(forced, "1") == 0) return false;  // run anyway, to look into it
  return sanitizer_tool() == "initcheck";
}

const char* const kGreenUnsupportedReason =
    "green contexts: skipped under initcheck, whose process dies at stream-ordered allocation on a green-context "
    "stream (exit 11, no error reported; scripts/gpu-sanitize's raw-CUDA probe shows it without project code); "
    "memcheck, racecheck and synccheck run this test";

}  // namespace trtet_test
