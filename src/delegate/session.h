// One loaded engine and everything a call needs: staging buffers, completion events, the lock.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "cuda/pinned_buffer.h"
#include "delegate/aux_streams.h"
#include "delegate/graph_cache.h"
#include "delegate/graph_hold.h"
#include "delegate/host_copy_pool.h"
#include "delegate/memory_kind.h"
#include "delegate/policy.h"
#include "delegate/tensor_view.h"
#include "engine/engine.h"

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
  /// session.cpp), 1 to 4. With two, a call's copies in wait for the engine two calls back and its
  /// engine for that call's copies out; the third slot (the default) gives each of those waits a
  /// call's slack, which P3h measured at 25.1 against 28.7 us per call (1 MiB in and out, 20 us
  /// engine, H200). A session used from one stream uses one slot whatever this says.
  int staging_slots = 3;
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
  /// the session usable.
  Status execute(TensorView* args, std::size_t count);

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
  /// Per binding, per call: where the engine reads or writes it.
  struct Binding {
    MemoryKind kind = MemoryKind::kDevice;
    void* user = nullptr;         ///< the caller's memory (for an aliased output: its input's)
    void* address = nullptr;      ///< the address the engine is bound to
    std::size_t bytes = 0;        ///< bytes moved for this call
    bool staged = false;          ///< copied through the session's device staging buffer
    Shape shape;                  ///< inputs: the shape set for this call
  };
  /// Per slot and binding (staging_index), owned: staging, grown on demand (or made at initialize
  /// within a budget). Device staging comes from the session's device memory pool and is shared
  /// with graphs that captured it (graph_hold.h). Host staging (pageable I/O only, never captured)
  /// comes from the session's pinned host memory pool, or, where the device has none, from
  /// cudaHostAlloc; only the first slot's entries hold it (calls with pageable memory finish with
  /// it before they release the lock, Note [pipelined calls]).
  struct Staging {
    SharedBuffer device;
    cuda::DeviceBuffer host;
    cuda::PinnedBuffer host_fallback;
    void* host_data() const noexcept { return host ? host.data() : host_fallback.data(); }
    std::size_t host_size() const noexcept { return host ? host.size() : host_fallback.size(); }
  };
  /// What the steps of one call share.
  struct Call {
    cudaStream_t caller = nullptr;  ///< the stream the caller selected (or cudaStreamPerThread)
    cudaStream_t stream = nullptr;  ///< the stream the work runs on (never a default-stream handle)
    bool joined = false;            ///< stream is the session's own, joined to `caller` by events
    unsigned long long stream_id = 0;
    CUgreenCtx green = nullptr;     ///< the green context of `stream` (valid when green_known)
    bool green_known = false;
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
    SharedEvent done;               ///< recorded when the call's host data is done; waited on by the caller
  };
  /// A staging slot: what its last users left in flight (Note [pipelined calls]).
  struct Slot {
    cuda::Event engine_done;        ///< after the last user's engine: the slot's input staging is free
    cuda::Event copies_done;        ///< after the last device-to-host copies out of it: its output staging is free
    unsigned long long engine_stream_id = 0;  ///< the stream engine_done was recorded on (0: unknown)
    unsigned long long copies_stream_id = 0;  ///< the stream copies_done was recorded on (0: unknown)
    bool engine_recorded = false;
    bool copies_recorded = false;
  };

  // The steps of execute(), in order. Everything up to prepare_staging only checks and decides;
  // from enqueue on, work is queued.
  Status execute_steps(TensorView* args, std::size_t count);
  Status resolve_stream(Call& call);
  Status classify_arguments(TensorView* args, Call& call);
  Status select_profile(const Call& call);
  Status resolve_shapes(TensorView* args, Call& call);
  Status prepare_staging(Call& call);
  Status bind_addresses();
  Status prepare_completion(Call& call);
  Status enqueue(Call& call);
  Status complete(Call& call, SharedEvent& wait_unlocked);

  /// The device of a stream not being captured (returned) and its id and green context (set in
  /// `call`), from the cache by stream id.
  Result<int> stream_placement(Call& call);
  Result<MemoryKind> classify(const TensorView& view, bool capturing);
  void mark_host(int index, Call& call);
  Status grow_device_staging(int index, std::size_t bytes, const Call& call);
  Status grow_host_staging(int index, std::size_t bytes, const Call& call);
  /// The capacity staging of binding `index` grows to from `held` for `needed` bytes: by half at
  /// least, but not past the binding's largest size (max_bytes_) when that is known.
  std::size_t staging_capacity(int index, std::size_t held, std::size_t needed) const noexcept;
  /// Makes chunk events until there are `count` (Note [staging budget], prepare_staging).
  Status ensure_chunk_events(std::size_t count);
  /// The address bound to empty tensors, made on first use (refused while capturing).
  Status ensure_empty_tensor(int index, cudaStream_t stream, bool capturing);
  /// Raises max_bytes_ of every output to its size with every input at `profile`'s maximum
  /// (`profile` selected). Leaves those input shapes set: every call sets its own before inferring.
  Status learn_output_bounds(int profile, bool first);
  /// Makes staging within the budget at initialize (Note [staging budget] in session.cpp).
  Status prepare_budgeted_staging();
  Status order_after_previous_calls(Call& call);
  Status order_staging_writes(Call& call);
  Status order_engine(Call& call);
  Status record_progress(Call& call, bool engine_done, bool copies_done);
  Status join_earlier_calls(Call& call);
  std::size_t staging_index(int slot, int binding) const noexcept {
    return static_cast<std::size_t>(slot) * bindings_.size() + static_cast<std::size_t>(binding);
  }
  Status copy_inputs_in(const Call& call);
  Status copy_outputs_out(const Call& call);
  Status stage_pageable_input(int index, const Call& call);
  Status queue_pageable_output(int index, const Call& call);
  Status copy_out_pageable_outputs();
  Status retain_for_graph(const Call& call);
  /// The engine's work for the call: its enqueue, or a delegate-owned graph (Note [delegate graphs]).
  Status run_engine(Call& call);
  Status capture_graph(const Call& call, cudaStream_t capture_stream, cudaGraphExec_t& exec);
  /// The auxiliary streams for the call's green context handed to the engine; with graphs on, one
  /// more stream there (returned) to capture on.
  Result<cudaStream_t> hand_over_aux_streams(CUgreenCtx green);
  void free_resources() noexcept;
  // Note [repeated calls]: the last call, kept when a call with the same arguments on the same
  // stream would take exactly its path again.
  bool repeats_last_call(const TensorView* args, std::size_t count, const Call& call) const noexcept;
  Status repeat_call(Call& call, SharedEvent& wait_unlocked);
  void remember_call(const TensorView* args, std::size_t count, const Call& call);

  mutable std::mutex mutex_;
  std::atomic<bool> closing_{false};
  engine::EnginePtr engine_;
  bool initialized_ = false;
  bool host_memory_is_device_accessible_ = false;  ///< integrated / ATS devices bind host memory directly
  std::vector<Binding> bindings_;
  std::vector<Staging> staging_;                  ///< slots x bindings (staging_index)
  std::vector<Slot> slots_;                       ///< SessionOptions::staging_slots
  int slot_ = 0;                                  ///< the slot of the last call that staged (or 0)
  unsigned long long slot_stream_id_ = 0;         ///< that call's stream (0: unknown or captured)
  bool staged_before_ = false;                    ///< a call has staged (the first takes slot 0)
  std::vector<int> alias_input_of_output_;        ///< per binding: aliased input index or -1
  PointerKindCache pointer_kinds_;
  cudaStream_t own_stream_ = nullptr;             ///< runs calls with no stream of the caller's; housekeeping
  cuda::Event join_in_;                           ///< the caller's stream → own_stream_ (back: completion_)
  /// Where the last eager call's engine ends: its slot's engine_done, or (-1) completion_ as it
  /// recorded it (a call that stages nothing queues nothing after its engine).
  int engine_slot_ = -1;
  unsigned long long engine_stream_id_ = 0;       ///< the stream that engine ran on (0: unknown)
  bool engine_pending_ = false;                   ///< an eager call has run the engine
  /// Per-call events for waits made after the lock is released: shared with the waiting caller, so
  /// destroy() cannot free one under it; reused once only the pool holds it.
  std::vector<SharedEvent> call_events_;
  SharedEvent completion_;                        ///< after every call (and every replay): covers all earlier ones
  bool completion_pending_ = false;               ///< completion_ recorded for work that may be in flight
  bool captured_ = false;                         ///< a graph holding a call of this session may replay
  unsigned long long last_stream_id_ = 0;         ///< the stream of the last eager call (cudaStreamGetId)
  /// Where the streams of recent calls belong. A stream's id is never reused in a process, and its
  /// device and green context never change, so a hit saves two driver queries per call.
  struct StreamPlacement {
    unsigned long long id = 0;  ///< 0: empty
    int device = -1;
    CUgreenCtx green = nullptr;
  };
  std::array<StreamPlacement, 4> stream_placements_{};
  std::size_t next_stream_placement_ = 0;
  unsigned long long own_stream_id_ = 0;
  SharedBuffer empty_tensor_;                     ///< a valid address for zero-size tensors (made on first use)
  cuda::LeasedPool device_pool_;                  ///< device staging and empty_tensor_, the session's alone
  cuda::LeasedPool host_pool_;                    ///< pinned host staging, stream-ordered
  std::vector<std::size_t> max_bytes_;            ///< per binding: its largest size over the profiles (0: unknown)
  std::vector<cuda::DeviceBuffer> retired_;       ///< outgrown staging, freed once ordered after earlier calls
  std::vector<cuda::PinnedBuffer> retired_pinned_;///< outgrown cudaHostAlloc staging, freed at destroy
  /// A chunk of a pageable output: its transfer's event, and the host copy that follows it.
  std::vector<cuda::Event> chunk_events_;
  std::vector<CopyTask> output_copies_;          ///< slices of pageable output chunks, in order
  std::vector<std::size_t> output_chunk_ends_;     ///< per chunk: the end of its slices in output_copies_
  std::vector<CopyTask> input_copies_;
  AuxStreams aux_streams_;
  int active_profile_ = 0;                        ///< the engine's selected optimization profile
  std::vector<bool> profile_used_;                ///< per profile: selected before (its first use may allocate)
  SessionOptions options_;
  GraphCache graphs_;
  GraphKey graph_key_;                            ///< reused per call (no allocation once warm)
  struct Repeat {
    bool kept = false;                            ///< a call is kept (cleared first)
    cudaGraphExec_t exec = nullptr;               ///< the graph it launched (owned by graphs_), or null: an enqueue
    unsigned long long stream_id = 0;
    int profile = 0;
    std::vector<TensorView> args;                 ///< as the call left them (outputs resized)
  };
  Repeat repeat_;                                 ///< Note [repeated calls]
  SessionStats stats_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
