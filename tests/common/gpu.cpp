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

bool strict_skips() {
  const char* flag = std::getenv("TRTET_STRICT_SKIPS");
  return flag != nullptr && std::strcmp(flag, "1") == 0;
}

namespace {

/// compute-sanitizer runs this process: its injection library is named in CUDA_INJECTION64_PATH.
bool sanitizer_injected() {
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  return injection != nullptr && std::strstr(injection, "sanitizer") != nullptr;
}

/// Whether the sanitizer variable `name` (set) is taken at its word: always, but in strict mode
/// where no sanitizer runs the process (a leftover would shrink the suite): a failure, then no.
bool believe_sanitizer_variable(const char* name) {
  if (sanitizer_injected() || !strict_skips()) return true;
  ADD_FAILURE() << name << " is set, but compute-sanitizer does not run this process (no sanitizer library in "
                << "CUDA_INJECTION64_PATH): a leftover variable would skip tests and shrink the contract fuzzer's "
                << "seed set. Unset it, or run scripts/gpu sanitize (TRTET_STRICT_SKIPS=1)";
  return false;
}

}  // namespace

bool under_sanitizer() {
  if (sanitizer_injected()) return true;
  const char* flag = std::getenv("TRTET_UNDER_SANITIZER");
  return flag != nullptr && std::strcmp(flag, "1") == 0 && believe_sanitizer_variable("TRTET_UNDER_SANITIZER");
}

std::string sanitizer_tool() {
  const char* tool = std::getenv("TRTET_SANITIZER_TOOL");
  if (tool == nullptr || *tool == '\0' || !believe_sanitizer_variable("TRTET_SANITIZER_TOOL")) return std::string();
  return std::string(tool);
}

bool green_contexts_unsupported_here() {
  const char* forced = std::getenv("TRTET_INITCHECK_GREEN");
  if (forced != nullptr && std::strcmp(forced, "1") == 0) return false;  // run anyway, to look into it
  return sanitizer_tool() == "initcheck";
}

const char* const kGreenUnsupportedReason =
    "green contexts: skipped under initcheck, whose process dies at stream-ordered allocation on a green-context "
    "stream (exit 11, no error reported; scripts/gpu sanitize's raw-CUDA probe shows it without project code); "
    "memcheck, racecheck and synccheck run this test";

}  // namespace trtet_test
