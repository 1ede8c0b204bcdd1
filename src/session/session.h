// One loaded engine run under the execute contract: the lock, the engine, its options, and
// execute() as named steps over the session's parts (stream resolution, profile selection,
// staging, call ordering, the chunked copy, the engine runner, the last call).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/spinning_mutex.h"
#include "common/status.h"
#include "session/call.h"
#include "session/call_ordering.h"
#include "session/call_schedule.h"
#include "session/engine_runner.h"
#include "session/last_call.h"
#include "session/memory_kind.h"
#include "session/policy.h"
#include "session/profile_selection.h"
#include "session/stream_resolution.h"
#include "session/tensor_view.h"
#include "engine/engine.h"
#include "staging/staging.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Counters a caller or test can read between calls.
struct SessionStats {
  std::uint64_t calls = 0;             ///< successful executes (counted before a wait made outside the lock)
  std::uint64_t staging_grows = 0;     ///< staging buffers (re)allocated
  std::uint64_t cross_stream_waits = 0;///< calls that waited on the GPU for an earlier call on another stream
  /// Eager calls ordered after the whole of every earlier call (after a capture, or to free outgrown
  /// staging) rather than pipelined (Note [pipelined calls]).
  std::uint64_t whole_call_waits = 0;
  /// Calls that waited for their own outputs (or host inputs) after releasing the session's lock, so
  /// other threads' calls were queued meanwhile (Note [pipelined calls]).
  std::uint64_t unlocked_waits = 0;
  /// With SessionOptions::time_the_lock: host nanoseconds execute() waited for the session's lock,
  /// and held it, over every call that took it (0 otherwise).
  std::uint64_t lock_wait_ns = 0;
  std::uint64_t lock_held_ns = 0;
  std::uint64_t captures = 0;          ///< calls recorded into a caller's graph capture
  std::uint64_t profile_switches = 0;  ///< calls that selected another optimization profile
  int last_profile = 0;                ///< the optimization profile of the last successful call
  std::uint64_t graph_captures = 0;    ///< delegate-owned graphs captured (Note [delegate graphs])
  std::uint64_t graph_launches = 0;    ///< calls that launched a delegate-owned graph
  /// Of graph_launches, those that repeated the previous call on its stream with the same
  /// arguments and skipped the call's preparation (Note [repeated calls]).
  std::uint64_t repeated_replays = 0;
  /// Eager calls that repeated the previous call likewise: the engine enqueued again, with the
  /// shapes and addresses it already holds (Note [repeated calls]).
  std::uint64_t repeated_enqueues = 0;
  Completion last_completion = Completion::kReturnAtOnce;
  /// Staging initialize() made within SessionOptions::staging_budget_bytes (device and host).
  std::uint64_t budgeted_staging_bytes = 0;
  /// What the session holds beyond its engine, read from its own memory pools when stats() is
  /// called (0 once destroyed). Device: staging for host I/O and the address bound to empty
  /// tensors. Host: pinned staging for pageable I/O (where the device has no host memory pools,
  /// the cudaHostAlloc staging's sizes, reserved and used alike, high marks 0). Reserved is what
  /// the pool holds, used what its allocations take; freed (outgrown) staging stays reserved
  /// until destroy (docs/DESIGN.md, "Staging").
  std::uint64_t device_reserved_bytes = 0;
  std::uint64_t device_used_bytes = 0;
  std::uint64_t device_reserved_high_bytes = 0;
  std::uint64_t device_used_high_bytes = 0;
  std::uint64_t host_reserved_bytes = 0;
  std::uint64_t host_used_bytes = 0;
  std::uint64_t host_reserved_high_bytes = 0;
  std::uint64_t host_used_high_bytes = 0;
  /// Host transfers of staged inputs and outputs (pageable ones chunk by chunk) made by the copy
  /// kernel and by the copy engines (Note [small copies]: small ones on a partition's stream take
  /// the kernel).
  std::uint64_t kernel_copies = 0;
  std::uint64_t engine_copies = 0;
};

/// The memory fields of `stats` in one line: "device reserved R used U (high RH / UH), host
/// reserved ... " (bytes).
std::string describe_memory(const SessionStats& stats);

/// How a session runs its engine, set at construction.
struct SessionOptions {
  /// Capture the engine's enqueue into CUDA graphs per call signature and replay them
  /// (Note [delegate graphs] in graph_cache.h).
  bool use_cuda_graphs = false;
  /// Graphs kept at most (least recently used out first).
  std::size_t graph_cache_size = 16;
  /// Bytes of staging initialize() makes up front, so that no call grows it (0: none; staging
  /// grows on demand). Each binding that may be staged takes its largest size over every
  /// optimization profile twice (device staging and pinned host staging), in binding order, while
  /// the total stays within the budget; a binding that does not fit grows on demand, with one
  /// warning at initialize. Output sizes come from shape inference at the inputs' maxima
  /// (docs/DESIGN.md, "Staging").
  std::size_t staging_budget_bytes = 0;
  /// Device staging slots for calls that overlap from several streams (Note [pipelined calls] in
  /// call_ordering.cpp), 1 to 4. With two, a call's copies in wait for the engine two calls back
  /// and its engine for that call's copies out; the third slot (the default) gives each of those
  /// waits a call's slack (docs/PERFORMANCE.md, pipelined_host_io). A session used from one stream
  /// uses one slot whatever this says.
  int staging_slots = 3;
  /// Time every execute()'s wait for the session's lock and its hold of it, into
  /// SessionStats::lock_wait_ns and lock_held_ns (two clock reads a call): what the lock costs
  /// calls from several threads (docs/PERFORMANCE.md, pipelined_host_io). Off: no clock is read.
  bool time_the_lock = false;
  /// Microseconds a call waiting for the session's lock spins before it sleeps (Note [a lock that
  /// spins first] in common/spinning_mutex.h): with several threads calling one session, the lock
  /// passes from call to call without a wake-up between them. 0: it sleeps at once.
  unsigned lock_spin_us = 50;
};

/// Runs one engine under the execute contract (docs/DESIGN.md, "The execute contract").
///
/// Calls are queued one at a time (a lock); a call that waits for its own host outputs or inputs
/// waits after releasing it, so calls from several threads on their own streams overlap on the GPU
/// (Note [pipelined calls]). Construct, then initialize() once; the ExecuTorch adapter
/// placement-constructs it in the runtime's allocator.
class Session {
 public:
  explicit Session(engine::EnginePtr engine, SessionOptions options = {}) noexcept;
  /// Waits, by event, for this session's own in-flight work, then frees its resources in stream
  /// order. Never synchronizes the device or another green context. Serialized with execute().
  ~Session();
  Session(const Session&) = delete;             // owns GPU resources and a lock
  Session& operator=(const Session&) = delete;
  Session(Session&&) = delete;                  // the ExecuTorch handle points at it
  Session& operator=(Session&&) = delete;

  /// Checks the engine's bindings and aliases and makes the session's events and buffers on the
  /// engine's device. kInvalidProgram for inconsistent engine metadata; kNoDevice without a GPU.
  Status initialize();

  /// Runs the engine on `args` (inputs then outputs, in binding order), on the caller stream of
  /// this thread (CudaStreamGuard) or, without one, ordered after this thread's
  /// cudaStreamPerThread. Every check is made before any work is enqueued; a failed call leaves
  /// the session usable. With `record` (a profiler's), the call's path, profile, staged bytes and
  /// stream are written there when it succeeds, and its GPU marks recorded on its stream
  /// (call_timing.h; Note [deferred GPU times]); without one, a null test at each mark. What the
  /// engine (or a runtime's resize callback) throws passes through, and leaves the session as a
  /// failed call does (Note [the call schedule]); the ExecuTorch adapter turns it into an error.
  Status execute(TensorView* args, std::size_t count, CallRecord* record = nullptr);

  /// Waits for this session's in-flight work (by event) and releases everything; later calls
  /// fail with kInvalidState. Safe against a concurrent execute on another thread, which it
  /// does not wait behind: calls that have not taken the lock yet fail at once.
  void destroy() noexcept;

  const engine::Engine& engine() const noexcept { return *engine_; }
  /// The counters, with the memory fields read from the session's pools now.
  SessionStats stats() const;

  /// Gives the driver back what the session's memory pools hold but no staging uses: outgrown
  /// staging, once its stream-ordered free has run (cudaMemPoolTrimTo to 0 on both pools). The
  /// pools keep such memory otherwise, until destroy (docs/DESIGN.md, "Staging"). Off the hot path:
  /// unmapping memory costs what a free does, and regrowing then maps (and page-locks) again.
  /// Serialized with execute; Ok and nothing done before initialize or after destroy.
  Status release_unused_memory();

 private:
  // The steps of execute(), in order. plan_call only checks and decides, filling in the call's
  // plan; queue_call queues its work through the call's schedule (call_schedule.h), which only
  // reads the plan.
  Status plan_call(TensorView* args, std::size_t count, CallPlan& plan);
  Result<HostIo> classify_arguments(TensorView* args, CallPlan& plan);
  Result<PointerFacts> classify(const TensorView& view, bool capturing);
  void mark_host(int index, const CallPlan& plan, HostIo& host) const;
  Status select_profile(const CallPlan& plan);
  Status resolve_shapes(TensorView* args, CallPlan& plan);
  Status bind_output(int index, TensorView* args, const Shape& shape, CallPlan& plan);
  Status prepare_staging(CallPlan& plan);
  Status bind_addresses(const CallPlan& plan);
  /// The call's work, phase by phase: copies in, the engine, copies out.
  Result<QueuedCall> queue_call(const CallPlan& plan, const SharedEvent& done);
  /// Queues a pinned binding's one transfer, in (cudaMemcpyHostToDevice) or out: a small one by the
  /// copy kernel on a partition's stream where the device reads the memory at its address, else by
  /// the copy engines (Note [small copies]); counted for stats().
  Status transfer_pinned(const CallPlan& plan, const Binding& binding, cudaMemcpyKind kind);
  Status copy_inputs_in(const CallPlan& plan);
  Status copy_outputs_out(const CallPlan& plan);
  /// Waits for the call's host data (`done`, under the lock for pageable I/O) or hands `done` to
  /// `wait_unlocked`, and counts the call.
  Status complete(const CallPlan& plan, SharedEvent done, SharedEvent& wait_unlocked);
  /// Note [repeated calls] (last_call.cpp): the kept call's engine queued again.
  Status repeat_call(CallPlan& plan, SharedEvent& wait_unlocked);
  /// What a profiler learns of a successful call (plan.record).
  void fill_record(const CallPlan& plan, CallPath path);
  void free_resources() noexcept;

  mutable SpinningMutex mutex_;
  std::atomic<bool> closing_{false};
  engine::EnginePtr engine_;
  SessionOptions options_;
  bool initialized_ = false;
  bool host_memory_is_device_accessible_ = false;  ///< integrated / ATS devices bind host memory directly
  CallPlan plan_;                                 ///< the call's plan, reused (its bindings' storage) by every call
  std::vector<int> alias_input_of_output_;        ///< per binding: aliased input index or -1
  PointerKindCache pointer_kinds_;
  ProfileSelection profiles_;
  StreamResolver streams_;
  StagingStore staging_;
  CallOrdering ordering_;
  ChunkedCopy copies_;                            ///< pageable copies through the staging's pinned chunks
  std::uint64_t pinned_kernel_copies_ = 0;        ///< pinned I/O's transfers by the copy kernel
  std::uint64_t pinned_engine_copies_ = 0;        ///< and by the copy engines
  EngineRunner runner_;
  LastCall last_call_;
  SessionStats stats_;                            ///< the counters the session keeps itself
};

}  // namespace torch_tensorrt::executorch_backend::delegate
