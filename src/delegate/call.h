// What the steps of one execute() share: where the call runs, what its arguments are, how it
// completes. Made by Session for each call and handed to its parts.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/stream_facts.h"
#include "cuda/stream_id.h"
#include "delegate/call_profile.h"
#include "delegate/graph_hold.h"
#include "delegate/memory_kind.h"
#include "delegate/policy.h"
#include "engine/types.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// The stream a call runs on, resolved once (StreamResolver): the caller's choice, the stream the
/// work is queued on, and what that stream is.
struct ResolvedStream {
  StreamChoice choice;             ///< the caller's selection (or the fallback), decided by policy
  cudaStream_t stream = nullptr;   ///< where the work runs: never a default-stream handle
  cuda::StreamId id;               ///< of `stream`; unknown while capturing
  cuda::StreamFacts facts;         ///< of `stream`: device, green context (if green_known), capturing
  bool green_known = false;        ///< facts.green_context was read (eager calls; captures ask later)
  /// `stream` is the session's own, joined to the caller's by events (a default-stream handle).
  bool joined() const noexcept { return choice.default_handle; }
};

/// Per binding, per call: where the engine reads or writes it.
struct Binding {
  MemoryKind kind = MemoryKind::kDevice;
  void* user = nullptr;         ///< the caller's memory (for an aliased output: its input's)
  void* address = nullptr;      ///< the address the engine is bound to
  std::size_t bytes = 0;        ///< bytes moved for this call
  bool staged = false;          ///< copied through the session's device staging buffer
  Shape shape;                  ///< inputs: the shape set for this call
};

/// One call, as its steps fill it in.
struct Call {
  ResolvedStream where;
  CallFacts facts;
  Completion completion = Completion::kReturnAtOnce;
  std::size_t output_chunks = 0;  ///< chunks of pageable outputs, each with its own event
  int profile = 0;                ///< the optimization profile the input shapes fit (tightest)
  int slot = -1;                  ///< the staging slot (-1: nothing staged)
  bool staged_inputs = false;     ///< some input is copied into the slot's device staging
  bool staged_outputs = false;    ///< some output is copied out of the slot's device staging
  bool after_all = false;         ///< the stream is already ordered after every earlier call
  bool cross_stream = false;      ///< waited on the GPU for an earlier call on another stream
  cudaGraphExec_t replayed = nullptr;  ///< the delegate-owned graph the call launched, if any
  bool enqueued_plainly = false;  ///< the engine was enqueued eagerly, with no aux streams or graph
  SharedEvent done;               ///< (graph_hold.h) recorded when the call's host data is done; waited on by the caller
  CallRecord* record = nullptr;   ///< the caller's record of the call (call_profile.h), filled when it succeeds
  CallMarks* marks = nullptr;     ///< the record's GPU marks, for a call that is not captured (else null)

  cudaStream_t stream() const noexcept { return where.stream; }
  bool capturing() const noexcept { return facts.capturing; }
};

}  // namespace torch_tensorrt::executorch_backend::delegate
