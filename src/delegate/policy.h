// The execute contract's decisions, as pure functions (tested without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Which stream a call runs on: the caller's selection, else cudaStreamPerThread.
/// With no selection while a green context is current on the thread, the call fails: launches on
/// cudaStreamPerThread would fail there ("invalid resource handle"), and silently picking a stream
/// of that green context would hide the missing guard. The message says to scope a CudaStreamGuard.
Result<cudaStream_t> resolve_stream(std::optional<cudaStream_t> selected, bool green_context_current);

/// The fallback stream when no CudaStreamGuard is in scope.
inline cudaStream_t fallback_stream() noexcept { return cudaStreamPerThread; }

/// What one call looks like, for deciding how it completes.
struct CallFacts {
  bool caller_selected = false;  ///< a CudaStreamGuard is in scope
  bool capturing = false;        ///< the stream is capturing into a graph
  bool host_inputs = false;      ///< some input is in host memory (pinned or pageable)
  bool host_outputs = false;     ///< some output is in host memory
  bool pageable = false;         ///< some argument is in pageable host memory
};

/// How long execute waits before returning.
enum class Completion {
  kReturnAtOnce,           ///< work stays queued on the stream; the caller synchronizes
  kWaitInputsConsumed,     ///< host inputs may be reused on return; outputs are on the device
  kWaitOutputsReady,       ///< every output (host or device) is ready on return
};

const char* to_string(Completion completion) noexcept;

/// The completion rule of Note [Execute contract]; kInvalidArgument for pageable host memory on a
/// capturing stream (nothing may synchronize there, and pageable copies do).
Result<Completion> decide_completion(const CallFacts& facts);

}  // namespace torch_tensorrt::executorch_backend::delegate
