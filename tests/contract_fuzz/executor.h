// Runs a sequence on the GPU: makes its sessions and streams, performs each step through the
// Session API exactly as a runtime would, and checks every call with the oracle. Stops at the
// first broken promise and says in which step it happened.
//
// Note [promises when made]
// Each promise of the execute contract is checked at the moment it is due, never after a sync
// that would make it hold anyway:
//  - a guarded call with device-only I/O returns at once: a gate (gate.h) holds the stream, and
//    cudaStreamQuery right after the call must say cudaErrorNotReady (a call that waited for its
//    stream returns only once the gate timed out, with the stream idle);
//  - a rejected call enqueues nothing: its stream, idle before (synchronized first), must be idle
//    right after it, before anything synchronizes it;
//  - the engine runs on the promised stream: the guard's stream object, else (no guard, or a
//    default-stream handle) the session's own stream, one non-default stream per session;
//  - kernels stay on the green context's SMs: a session recording SMs, called on a green stream,
//    recorded only SMs of that partition (measured at start by the SM probe);
//  - results are ready when the stream is: a guarded call without host outputs is checked through
//    an event recorded on its stream right after it, once the next step has queued its own calls
//    (no full sync between steps), latest call first, so a later call on another stream that did
//    not wait for it (its engine, or its copies into shared staging), or a stream that does not
//    follow every earlier call, changes what is read;
//  - a later call waits for the earlier ones: such a call's gate stays closed while the next call
//    of its session, on another stream, is made (when that one returns at once too); an event
//    after that call must not complete while the gate holds the earlier call (polled for
//    kBehindGateMs: with the orderings kept it never can, whatever the timing).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/oracle.h"
#include "contract_fuzz/sequence.h"
#include "contract_fuzz/stream_slots.h"
#include "session/session.h"
#include "engines/test_engine.h"

namespace trtet_test::fuzz {

/// The step being run, for the watchdog: its index (-1 between sequences) and when it began
/// (steady_clock nanoseconds).
extern std::atomic<long> g_current_step;
extern std::atomic<long long> g_step_started_ns;

/// The SessionOptions a session over `spec` is made with (its graphs, staging budget and slots).
ex::delegate::SessionOptions session_options(const EngineSpec& spec);

struct RunResult {
  Verdict failure;          ///< empty: every step kept its promises
  std::size_t step = 0;     ///< the failing step's index in the sequence
  std::uint64_t graphs = 0; ///< graphs captured
  std::uint64_t replays = 0;
  std::uint64_t retired = 0;///< graphs dropped before a replay (their session gone)
};

class Executor {
 public:
  Executor(const Sequence& sequence, Tally& tally);
  ~Executor();
  Executor(const Executor&) = delete;             // owns sessions, streams and graphs
  Executor& operator=(const Executor&) = delete;

  /// Runs sequence.steps[i] for each i of `keep` (ascending), in order.
  RunResult run(const std::vector<std::size_t>& keep);

 private:
  /// SessionSlot::sm_partition: the engine's recorded SMs are all of one partition (0, 1), none
  /// were recorded yet, or they may come from anywhere (cleared before the next SM check).
  static constexpr int kSmClean = -2;
  static constexpr int kSmMixed = -1;
  struct SessionSlot {
    explicit SessionSlot(const EngineSpec& spec) : model(spec) {}
    EngineModel model;
    std::unique_ptr<ex::delegate::Session> session;
    TestEngine* engine = nullptr;  ///< owned by the session; null once destroyed
    bool alive = false;
    int generation = 0;
    std::unique_ptr<SharedCache> cache;      ///< in-place engines: the shared cache
    cudaStream_t own_stream = nullptr;       ///< the session's own stream, as the engine was handed it
    int sm_partition = kSmClean;
    /// Per optimization profile: selected by an earlier call of this session (profile 0 from the
    /// start). A profile's first use is refused inside a capture (docs/DESIGN.md, "Optimization
    /// profiles"); only a call that succeeds outside a capture makes it (Note [profiles used]).
    std::vector<bool> profile_used;
  };
  struct GraphRecord {
    int session = 0;
    int generation = 0;
    StreamRef stream;
    std::unique_ptr<CallArgs> args;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
  };
  struct Counters {
    std::uint64_t calls = 0;
    std::uint64_t enqueues = 0;
    std::uint64_t graph_captures = 0;  ///< delegate-owned graphs (the engine is handed a capture stream)
  };
  /// A guarded call without host outputs, checked later (Note [promises when made]).
  struct Pending {
    Pending() = default;
    Pending(Pending&& other) noexcept;
    Pending& operator=(Pending&& other) noexcept;
    ~Pending();
    SessionSlot* slot = nullptr;
    int generation = 0;
    std::uint64_t cache_updates = 0;  ///< the shared cache's updates with this call (shared-cache calls)
    std::unique_ptr<CallArgs> args;
    cudaEvent_t done = nullptr;       ///< recorded on the call's stream right after it
    std::size_t step = 0;
  };
  /// The gate of the last deferred call, still closed (Note [promises when made]).
  struct Held {
    Gate::Ticket ticket;
    cudaStream_t stream = nullptr;     ///< the stream the held call is ordered after
    const SessionSlot* slot = nullptr;
    int generation = 0;
  };
  /// How call() makes a call.
  struct CallHow {
    bool may_defer = false;      ///< a guarded call without host outputs may be checked later (Pending)
    bool work_queued = false;    ///< the caller work is already queued (a repeat's requeue)
    std::size_t step = 0;
  };

  Verdict setup();
  Verdict make_session(SessionSlot& slot);
  Verdict step(std::size_t index, const Step& step);
  Verdict call_step(std::size_t index, const CallStep& step);
  Verdict capture_step(std::size_t index, const CaptureStep& step);
  Verdict replay_step(const ReplayStep& step);
  Verdict concurrent_step(const ConcurrentStep& step);
  Verdict destroy_step(const DestroyStep& step);
  Verdict recreate_session_step(const RecreateSessionStep& step);
  Verdict recreate_stream_step(const RecreateStreamStep& step);
  Verdict bad_call_step(const BadCallStep& step);
  Verdict repeat_step(std::size_t index, const RepeatStep& step);

  /// Prepares `plan`'s arguments with thread `thread`'s I/O stream.
  Verdict prepare(const SessionSlot& slot, const CallPlan& plan, int thread, std::unique_ptr<CallArgs>& out);
  /// execute() on `args` from the main thread as plan says (guard or not, caller work), with the
  /// promise checks (Note [promises when made]), the oracle and the session's counters. `args`
  /// moves into a Pending where the call's check is deferred.
  Verdict call(SessionSlot& slot, std::unique_ptr<CallArgs>& args, const CallHow& how);
  /// The stream `plan`'s call is ordered after: the guard's (the legacy stream for a null one), or
  /// cudaStreamPerThread without a guard.
  cudaStream_t ordered_stream(const CallPlan& plan) const;
  /// Checks the stream the engine was handed (a plain, caller-captured or first-sight enqueue).
  Verdict check_engine_stream(SessionSlot& slot, const CallPlan& plan, cudaStream_t handed);
  /// Before an SM-checked call on `partition`: clears what the engine recorded elsewhere.
  Verdict prepare_sm_check(SessionSlot& slot, int partition);
  Verdict check_sms(SessionSlot& slot, int partition);
  /// The shared cache holds what the model says, read now (`when` names the moment).
  Verdict check_shared_cache(const SessionSlot& slot, const char* when);
  /// Opens the held gate, if any.
  void release_held() noexcept;
  /// Right after a call ordered after `ordered` was queued behind the held call: an event there must
  /// not complete while the held call cannot run.
  Verdict check_behind_held(cudaStream_t ordered);
  /// Resolves the pending checks of steps before `before` (all with SIZE_MAX), latest first.
  Verdict resolve_pending(std::size_t before);
  /// Buffers not to lend again yet (Note [buffers in use]).
  std::vector<const Buffer*> buffers_in_use() const;
  /// What the contract says `args` must give; `reason` says why for an expected failure.
  Expect expectation(const SessionSlot& slot, const CallArgs& args, bool capturing, const char** reason) const;
  /// The profile a call on `args` selects, if the session has not used it yet (-1: it has, or the
  /// call is refused before a profile is selected). Such a call is refused inside a capture.
  int unused_profile(const SessionSlot& slot, const CallArgs& args) const;
  /// A call on `args` succeeded outside a capture: its profile counts as used (Note [profiles used]).
  static void note_profile_used(SessionSlot& slot, const CallArgs& args);
  Counters counters(const SessionSlot& slot) const;
  /// `successes` more calls; as many engine enqueues, or at most as many with delegate graphs
  /// (a replay enqueues nothing).
  Verdict check_counters(const SessionSlot& slot, const Counters& before, std::uint64_t successes,
                         std::uint64_t enqueues, const char* what) const;
  void retire_graphs_of(int session);
  void release_graph(GraphRecord& graph);

  const Sequence& sequence_;
  Tally& tally_;
  GpuWorld& world_;
  BufferPool pool_;
  std::unique_ptr<StreamSlots> streams_;
  std::vector<std::unique_ptr<SessionSlot>> sessions_;
  std::vector<std::unique_ptr<GraphRecord>> graphs_;  ///< by capture step index (null: none)
  std::vector<Pending> pending_;                      ///< oldest first
  Held held_;
  RunResult result_;
};

}  // namespace trtet_test::fuzz
