// What the steps of one execute() share: where the call runs, its plan (what the checks decided)
// and what the steps that queue its work return (how it was ordered, how the engine ran).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/stream_facts.h"
#include "cuda/stream_id.h"
#include "session/call_timing.h"
#include "session/memory_kind.h"
#include "session/policy.h"
#include "engine/types.h"
#include "staging/staging.h"

namespace torch_tensorrt::executorch_backend::delegate {

// The staging layer's names the session uses (staging/staging.h, staging/chunked_copy.h).
using staging::chunk_count;
using staging::ChunkedCopy;
using staging::ContiguousChunks;
using staging::drain_released_graph_holds;
using staging::retain_in_capture;
using staging::SharedEvent;
using staging::StagingMemory;
using staging::StagingStore;

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
  /// `stream` is known to run on a green context: its SMs are its own, so a small copy by a kernel
  /// on it waits for no one else's work (Note [small copies]).
  bool on_partition() const noexcept { return green_known && facts.green_context != nullptr; }
};

/// Per binding, per call: where the engine reads or writes it.
struct Binding {
  MemoryKind kind = MemoryKind::kDevice;
  void* user = nullptr;         ///< the caller's memory (for an aliased output: its input's)
  void* address = nullptr;      ///< the address the engine is bound to
  std::size_t bytes = 0;        ///< bytes moved for this call
  bool staged = false;          ///< copied through the session's device staging buffer
  bool device_mapped = false;   ///< pinned host memory the device reads at its address (PointerFacts)
  Shape shape;                  ///< inputs: the shape set for this call
};

/// Which arguments are in host memory, as the checks classify them.
struct HostIo {
  bool inputs = false;    ///< some input is in host memory (pinned or pageable)
  bool outputs = false;   ///< some output is in host memory
  bool pageable = false;  ///< some argument is in pageable host memory
};

/// One call as the checks plan it. Session's check steps fill it in, in order; the steps that
/// queue work (the call's schedule, the copies, the engine run, completion, the last call) only
/// read it. The session keeps one plan and starts each call on it (start), so the bindings' storage
/// is made once, at initialize, and reused by every call.
struct CallPlan {
  ResolvedStream where;
  std::vector<Binding> bindings;  ///< per binding, this call's: sized at initialize, reused
  HostIo host;
  Completion completion = Completion::kReturnAtOnce;
  int profile = 0;                ///< the optimization profile the input shapes fit (tightest)
  int slot = -1;                  ///< the staging slot (-1: nothing staged)
  bool staged_inputs = false;     ///< some input is copied into the slot's device staging
  bool staged_outputs = false;    ///< some output is copied out of the slot's device staging
  /// Outgrown staging waits to be freed (StagingStore's retire rule): the call orders itself after
  /// every earlier call.
  bool frees_staging = false;
  std::size_t output_chunks = 0;  ///< chunks of pageable outputs, each with its own event
  CallRecord* record = nullptr;   ///< the caller's record of the call (call_timing.h), filled when it succeeds
  CallMarks* marks = nullptr;     ///< the record's GPU marks, for a call that is not captured (else null)

  /// A new call: every field as a new plan has it, but the bindings' storage, kept (their values
  /// are set by the checks before any step reads them).
  void start() noexcept {
    std::vector<Binding> kept = std::move(bindings);
    *this = CallPlan{};
    bindings = std::move(kept);
  }

  cudaStream_t stream() const noexcept { return where.stream; }
  bool capturing() const noexcept { return where.facts.capturing; }
  /// What the completion rule (policy.h, decide_completion) reads of the call.
  CallFacts completion_facts() const noexcept {
    return CallFacts{where.choice.selected, where.facts.capturing, host.inputs, host.outputs, host.pageable};
  }
};

/// What call ordering decided for one call (CallOrdering::begin): the waits made before any of
/// its work, and those its copies in and its engine make (Note [pipelined calls]).
struct CallOrder {
  /// The stream follows every earlier call (nothing earlier, all of it ahead on this stream, or a
  /// wait on the completion event): the call waits for nothing else.
  bool after_all = false;
  bool cross_stream = false;       ///< some wait is for an earlier call on another stream
  bool graphs_may_replay = false;  ///< a graph holding a call of the session may replay
  cudaEvent_t before_copies = nullptr;   ///< the copies into the slot wait for it: the slot's last engine
  cudaEvent_t before_engine = nullptr;   ///< the engine waits for it: the previous call's engine
  cudaEvent_t before_engine_copies = nullptr;  ///< and for it: the last copies out of the call's slot
};

/// How the engine ran for one call (EngineRunner::run, EngineRunner::repeat).
struct EngineRun {
  cudaGraphExec_t launched = nullptr;  ///< the delegate-owned graph launched, if any
  bool plain = false;                  ///< enqueued eagerly, with no auxiliary streams and no graph
};

}  // namespace torch_tensorrt::executorch_backend::delegate
