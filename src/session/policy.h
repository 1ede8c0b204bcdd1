// The execute contract's decisions, as pure functions (tested without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "common/status.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// The stream a call is asked to run on, decided once, here: the caller's selection
/// (CudaStreamGuard), else the fallback stream.
struct StreamChoice {
  cudaStream_t caller = nullptr;  ///< the selected stream, or fallback_stream()
  bool selected = false;          ///< a CudaStreamGuard is in scope
  /// `caller` names a default stream (0, legacy or per-thread): an engine never receives one
  /// (TensorRT synchronizes the device for it), so the work runs on a stream of the runtime's own,
  /// joined to `caller` by events.
  bool default_handle = false;
};

/// Whether choose_stream must know if a green context is current: only for a default-stream
/// handle, which cannot run there.
bool needs_green_context_query(std::optional<cudaStream_t> selected) noexcept;

/// The stream choice for a call. With a green context current on the thread and a default-stream
/// handle (none selected, or one selected), kInvalidArgument: launches there fail ("invalid
/// resource handle"), and silently picking a stream of that green context would hide the missing
/// guard; the message says to scope a CudaStreamGuard with a stream of that green context.
/// `green_context_current` is read only where needs_green_context_query() is true.
Result<StreamChoice> choose_stream(std::optional<cudaStream_t> selected, bool green_context_current);

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
