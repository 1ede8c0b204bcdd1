// A test-only fault point in the test engines (the seam of tests/faults): a hook, null by default,
// that says whether a named step of a test engine fails. The fault loop (tests/faults) sets it to
// count the steps as fallible points and fail the one it has armed.
#pragma once

#include "common/status.h"

namespace trtet_test {

/// Returns true when the step `point` must fail.
using EngineFaultHook = bool (*)(const char* point);

/// Sets (or, with nullptr, clears) the process's hook.
void set_engine_fault_hook(EngineFaultHook hook) noexcept;

/// Ok, unless the hook fails `point`: then kMemoryAllocationFailed "<point>: injected fault".
/// Points: "test engine factory" (make_test_engine), "test engine enqueue" (the elementwise and fake
/// engines' enqueue).
torch_tensorrt::executorch_backend::Status engine_fault(const char* point);

}  // namespace trtet_test
