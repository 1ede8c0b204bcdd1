// The contract checks of one execute(): the status against what was expected, then every output
// against the CPU reference and every input against its copy, each at the moment the execute
// contract says it is ready (README.md, "The execute contract"):
//  - no guard: everything, right after return, with no synchronization;
//  - a guard and host memory: host outputs right after return, and host inputs may be overwritten
//    then (the fuzzer scribbles over them); device-side results after synchronizing the stream;
//  - a guard and device memory only: after synchronizing the stream;
//  - a rejected call: every output still poisoned, every input unchanged, nothing left running.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "contract_fuzz/call_args.h"

namespace trtet_test::fuzz {

/// What kind of promise was broken: the shrinker keeps a deletion only if the same kind still fails.
enum class Category : int { kStatus = 1, kOutputs, kInputs, kCapture, kCounters, kCrashOrHang, kHarness, kPromise };
const char* to_string(Category category) noexcept;

struct Failure {
  Category category = Category::kHarness;
  std::string message;
};
using Verdict = std::optional<Failure>;

/// Counted across threads for the summary line.
struct Tally {
  std::atomic<std::uint64_t> calls{0};    ///< execute() invocations
  std::atomic<std::uint64_t> tensors{0};  ///< tensors compared (outputs with the reference, inputs with their copy, poison)
  std::atomic<std::uint64_t> bytes{0};    ///< bytes those comparisons read
  // Promises checked when they are made (executor.cpp, Note [promises when made]):
  std::atomic<std::uint64_t> busy_at_return{0};    ///< a guarded device-only call returned with its gated stream busy
  std::atomic<std::uint64_t> idle_after_reject{0}; ///< an idle stream still idle right after a rejected call
  std::atomic<std::uint64_t> sm_checks{0};         ///< a green call's recorded SMs within its partition's
  std::atomic<std::uint64_t> stream_checks{0};     ///< the engine ran on the stream the contract promised
  std::atomic<std::uint64_t> behind_gate{0};       ///< a call stayed behind the earlier call a gate held
  std::atomic<std::uint64_t> deferred{0};          ///< calls checked only after later calls were queued
};

enum class Expect { kSuccess, kFailure, kEither };

/// How the call was made.
struct CallContext {
  bool guard = false;
  cudaStream_t stream = nullptr;  ///< the guard's stream (unused without a guard)
  cudaStream_t io = nullptr;      ///< this thread's I/O stream
  bool scribble = false;          ///< overwrite host inputs once the contract allows it
  const char* failure_reason = "";///< why kFailure was expected (for the message)
  /// Compare the in-place update's values (false where later calls may have updated the shared
  /// cache too, or calls of other threads: their sum is checked at the end instead).
  bool alias_values = true;
  /// A guarded call without host outputs whose device-side checks come later (check_device_results
  /// after an event recorded on the stream): only the status, and host inputs, are checked now.
  bool defer_device = false;
};

/// Checks `status` and the tensors of `args` after execute returned. Synchronizes the call's stream
/// only where the contract makes the caller do so.
Verdict check_call(CallArgs& args, const ex::Status& status, Expect expect, const CallContext& context, Tally& tally);

/// A guarded call's device-side outputs and inputs, once its work is complete (checked by the caller).
Verdict check_device_results(CallArgs& args, cudaStream_t io, Tally& tally, bool alias_values, const char* when);

/// After a graph launch on `stream`: synchronizes it and checks every output and input.
Verdict check_replay(CallArgs& args, cudaStream_t stream, cudaStream_t io, Tally& tally);

/// Every output buffer of `args` still poisoned and every input unchanged (a rejected call).
Verdict check_untouched(CallArgs& args, cudaStream_t io, Tally& tally);

/// "cudaErrorX (its description)", for failure messages.
std::string error_name(cudaError_t e);

}  // namespace trtet_test::fuzz
