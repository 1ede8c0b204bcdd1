#include "engines/fault_hook.h"

#include <atomic>

namespace trtet_test {
namespace {
std::atomic<EngineFaultHook> g_hook{nullptr};
}  // namespace

void set_engine_fault_hook(EngineFaultHook hook) noexcept { g_hook.store(hook); }

torch_tensorrt::executorch_backend::Status engine_fault(const char* point) {
  namespace ex = torch_tensorrt::executorch_backend;
  const EngineFaultHook hook = g_hook.load();
  if (hook != nullptr && hook(point)) {
    return ex::make_error(ex::ErrorCode::kMemoryAllocationFailed, "%s: injected fault", point);
  }
  return ex::Status::Ok();
}

}  // namespace trtet_test
