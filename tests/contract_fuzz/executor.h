// Runs a sequence on the GPU: makes its sessions and streams, performs each step through the
// Session API exactly as a runtime would, and checks every call with the oracle. Stops at the
// first broken promise and says in which step it happened.
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
#include "delegate/session.h"
#include "engines/test_engine.h"

namespace trtet_test::fuzz {

/// The step being run, for the watchdog: its index (-1 between sequences) and when it began
/// (steady_clock nanoseconds).
extern std::atomic<long> g_current_step;
extern std::atomic<long long> g_step_started_ns;

struct RunResult {
  Verdict failure;          ///< empty: every step kept its promises
  std::size_t step = 0;     ///< the failing step's index in the sequence
  std::uint64_t graphs = 0; ///< graphs captured
  std::uint64_t replays = 0;
  std::uint64_t retired = 0;///< graphs dropped before a replay (their session gone or its staging grown)
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
  struct SessionSlot {
    explicit SessionSlot(const EngineSpec& spec) : model(spec) {}
    EngineModel model;
    std::unique_ptr<ex::delegate::Session> session;
    TestEngine* engine = nullptr;  ///< owned by the session; null once destroyed
    bool alive = false;
    int generation = 0;
    /// Per binding: the most bytes ever staged from host memory (staging never shrinks below it).
    std::vector<std::size_t> staged;
  };
  struct GraphRecord {
    int session = 0;
    int generation = 0;
    StreamRef stream;
    std::unique_ptr<CallArgs> args;
    std::vector<std::size_t> staged;  ///< the session's `staged` when captured
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
  };
  struct Counters {
    std::uint64_t calls = 0;
    std::uint64_t enqueues = 0;
  };

  Verdict setup();
  Verdict make_session(SessionSlot& slot);
  Verdict step(std::size_t index, const Step& step);
  Verdict call_step(const CallStep& step);
  Verdict capture_step(std::size_t index, const CaptureStep& step);
  Verdict replay_step(const ReplayStep& step);
  Verdict concurrent_step(const ConcurrentStep& step);
  Verdict destroy_step(const DestroyStep& step);
  Verdict recreate_session_step(const RecreateSessionStep& step);
  Verdict recreate_stream_step(const RecreateStreamStep& step);
  Verdict bad_call_step(const BadCallStep& step);

  /// Prepares `plan`'s arguments with thread `thread`'s I/O stream.
  Verdict prepare(const SessionSlot& slot, const CallPlan& plan, int thread, std::unique_ptr<CallArgs>& out);
  /// execute() on `args` as plan says (guard or not), then the oracle and the session's counters.
  Verdict call(SessionSlot& slot, CallArgs& args, int thread);
  /// What the contract says `args` must give; `reason` says why for an expected failure.
  Expect expectation(const SessionSlot& slot, const CallArgs& args, bool capturing, const char** reason) const;
  Counters counters(const SessionSlot& slot) const;
  Verdict check_counters(const SessionSlot& slot, const Counters& before, std::uint64_t successes,
                         std::uint64_t enqueues, const char* what) const;
  void note_staging(SessionSlot& slot, const CallArgs& args);
  void retire_graphs_of(int session);
  void release_graph(GraphRecord& graph);

  const Sequence& sequence_;
  Tally& tally_;
  GpuWorld& world_;
  BufferPool pool_;
  std::unique_ptr<StreamSlots> streams_;
  std::vector<std::unique_ptr<SessionSlot>> sessions_;
  std::vector<std::unique_ptr<GraphRecord>> graphs_;  ///< by capture step index (null: none)
  RunResult result_;
};

}  // namespace trtet_test::fuzz
