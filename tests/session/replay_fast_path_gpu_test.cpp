// Repeated calls (Note [repeated calls] in src/session/last_call.cpp): a call with the same
// arguments on the same stream as the previous one launches its graph again (graph mode) or
// enqueues the engine again (eager) without preparing the call. These tests check that the repeat
// is taken exactly when nothing changed, that every change (stream, shape, addresses, host memory,
// a caller's capture, a rejected call, an engine that throws, trimming, destroy) takes the full
// path, and that outputs are right throughout, with fresh input data every call.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/kernels.h"
#include "engines/probe_engine.h"

namespace trtet_test {
namespace {

ex::delegate::SessionOptions graphs_on() {
  ex::delegate::SessionOptions options;
  options.use_cuda_graphs = true;
  return options;
}

ex::delegate::SessionOptions graphs_off() {
  ex::delegate::SessionOptions options;
  options.use_cuda_graphs = false;
  return options;
}

/// Two threads, each on its own stream with its own tensors, 300 calls each on one session: every
/// output right, every call counted, and repeats only where the other thread did not come between.
void two_threads_interleave(const std::array<cudaStream_t, 2>& streams, ex::delegate::SessionOptions options) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=2", options);
  ASSERT_TRUE(s.session);
  constexpr int kCalls = 300;
  std::atomic<int> wrong{0}, failed{0};
  auto work = [&](int t) {
    AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{t == 0 ? 16 : 48, 256});
    for (int call = 0; call < kCalls; ++call) {
      if (!run_and_sync(*s.session, io, streams[static_cast<std::size_t>(t)]).ok()) {
        failed.fetch_add(1);
      } else if (!io.out_matches()) {
        wrong.fetch_add(1);
      }
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  const auto stats = s.session->stats();
  EXPECT_EQ(stats.calls, 2u * kCalls);
  if (options.use_cuda_graphs) {
    EXPECT_GT(stats.graph_launches, 0u);
    EXPECT_LE(stats.repeated_replays, stats.graph_launches);
  } else {
    EXPECT_EQ(s.engine->enqueue_count(), 2u * kCalls);
    EXPECT_LT(stats.repeated_enqueues, 2u * kCalls);
  }
}

/// One step of a call sequence: `calls` calls with `io` on `stream`, of which `repeats` repeat the
/// call before them.
struct Step {
  AxpbyIo* io;
  cudaStream_t stream;
  int calls;
  std::uint64_t repeats;
};

/// Runs `steps` on `session` with fresh inputs every call, checking every output and, after each
/// step, the repeats counted so far in `counter` (repeated_replays or repeated_enqueues).
void run_steps(Session& session, const std::vector<Step>& steps, std::uint64_t ex::delegate::SessionStats::*counter) {
  std::uint64_t expected = 0;
  int call = 0;
  for (const Step& step : steps) {
    for (int i = 0; i < step.calls; ++i, ++call) {
      TRTET_ASSERT_OK(run_and_sync(session, *step.io, step.stream));
      ASSERT_TRUE(step.io->out_matches()) << "call " << call;
    }
    expected += step.repeats;
    EXPECT_EQ(session.stats().*counter, expected) << "after call " << call;
  }
}

/// `calls` calls with `io` on `stream` (fresh inputs, then a sync, each), after which the session's
/// `counter` (repeated_replays or repeated_enqueues) must be `repeats`.
::testing::AssertionResult calls_repeat(Session& session, AxpbyIo& io, cudaStream_t stream, int calls,
                                        std::uint64_t ex::delegate::SessionStats::*counter, std::uint64_t repeats) {
  for (int call = 0; call < calls; ++call) {
    const ex::Status status = run_and_sync(session, io, stream);
    if (!status.ok()) return ::testing::AssertionFailure() << "call " << call << ": " << status.to_string();
  }
  const std::uint64_t counted = session.stats().*counter;
  if (counted != repeats) return ::testing::AssertionFailure() << counted << " repeats after " << calls << " calls, not " << repeats;
  return ::testing::AssertionSuccess();
}

/// `calls` calls with the same tensors on `stream` (`repeats` of them counted in `counter`), then a
/// caller's capture of one more: the capture records the call, and from then on (a graph of the
/// caller's may replay) the caller's replays and the session's eager calls alternate, every output
/// right and no call repeated.
void capture_after_repeats(cudaStream_t stream, ex::delegate::SessionOptions options, int calls,
                           std::uint64_t ex::delegate::SessionStats::*counter, std::uint64_t repeats) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=2", options);
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  ASSERT_TRUE(calls_repeat(*s.session, io, stream, calls, counter, repeats));
  const CapturedCall captured = capture_call(stream, *s.session, io.args());
  ASSERT_EQ(captured.ended, cudaSuccess);
  TRTET_ASSERT_OK(captured.status);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, captured.graph, 0), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(replay_and_check(exec, stream, io)) << "the caller's replay " << round;
    TRTET_ASSERT_OK(run_and_sync(*s.session, io, stream));
    ASSERT_TRUE(io.out_matches()) << "eager call " << round << " after the capture";
  }
  EXPECT_EQ(s.session->stats().*counter, repeats) << "a graph of the caller's may replay: no repeats";
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(captured.graph), cudaSuccess);
}

using ReplayFastPathGpu = StreamsGpuTest<2>;

// ---- Both modes ----------------------------------------------------------------------------------

/// The same tests in graph mode (GetParam(): repeats relaunch the call's graph) and in eager mode
/// (repeats enqueue the engine again).
class ReplayFastPathModesGpu : public StreamsGpuTest<2>, public ::testing::WithParamInterface<bool> {
 protected:
  bool graphs() const { return GetParam(); }
  ex::delegate::SessionOptions options() const { return graphs() ? graphs_on() : graphs_off(); }
  /// The counter of this mode's repeats.
  std::uint64_t ex::delegate::SessionStats::*repeats() const {
    return graphs() ? &ex::delegate::SessionStats::repeated_replays : &ex::delegate::SessionStats::repeated_enqueues;
  }
};

TEST_P(ReplayFastPathModesGpu, TheSameCallAgainRepeatsAndReadsFreshInputs) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=3", options());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{32, 256});
  // Graph mode: the first call runs eagerly, the second captures and launches; the 18 after repeat
  // it. Eager: every call after the first repeats.
  run_steps(*s.session, {{&io, streams_[0], 20, graphs() ? 18u : 19u}}, repeats());
  const auto stats = s.session->stats();
  EXPECT_EQ(stats.calls, 20u);
  if (graphs()) {
    EXPECT_EQ(stats.graph_captures, 1u);
    EXPECT_EQ(stats.graph_launches, 19u);
    EXPECT_EQ(s.engine->enqueue_count(), 2u);
  } else {
    EXPECT_EQ(stats.repeated_replays, 0u);
    EXPECT_EQ(stats.graph_launches, 0u);
    EXPECT_EQ(s.engine->enqueue_count(), 20u);
  }
}

TEST_P(ReplayFastPathModesGpu, EveryChangeTakesTheFullPathAndStaysRight) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=2", options());
  ASSERT_TRUE(s.session);
  AxpbyIo a(Memory::kDevice, Memory::kDevice, Shape{32, 256});
  AxpbyIo shape(Memory::kDevice, Memory::kDevice, Shape{8, 256});
  AxpbyIo addresses(Memory::kDevice, Memory::kDevice, Shape{32, 256});  // a's shape, other tensors
  AxpbyIo pinned(Memory::kPinned, Memory::kPinned, Shape{32, 256});
  AxpbyIo pageable(Memory::kPageable, Memory::kPageable, Shape{32, 256});
  // Each row: the tensors, the stream, the calls, and how many repeat in graph mode and in eager
  // mode (kEagerOnly: the row runs in eager mode only).
  constexpr int kEagerOnly = -1;
  struct Row {
    AxpbyIo* io;
    cudaStream_t stream;
    int calls;
    int graph_repeats, eager_repeats;
  };
  const Row rows[] = {
      {&a, streams_[0], 3, 1, 2},          // graph: eager, captured, repeated; eager: kept, repeated twice
      {&a, streams_[1], 3, 1, 1},          // another stream: waits for the first (full path), then kept, repeated
      {&shape, streams_[1], 3, 1, 2},      // another shape: (graph: eager, captured,) kept, repeated
      {&addresses, streams_[1], 3, 1, 2},  // other addresses: (graph: eager, captured,) kept, repeated
      {&pinned, streams_[1], 3, 0, 0},     // host memory: staged, never repeated
      {&a, streams_[1], 2, 1, 1},          // a's graph (or a's call) found again: kept, then repeated
      {&pageable, streams_[1], 2, kEagerOnly, 0},  // pageable: staged, never repeated
      {&shape, streams_[0], 2, 0, 0},      // another stream and shape: waits, then kept
      {&shape, streams_[0], 1, 1, 1},
  };
  std::vector<Step> steps;
  int calls = 0;
  for (const Row& row : rows) {
    const int row_repeats = graphs() ? row.graph_repeats : row.eager_repeats;
    if (row_repeats == kEagerOnly) continue;
    steps.push_back({row.io, row.stream, row.calls, static_cast<std::uint64_t>(row_repeats)});
    calls += row.calls;
  }
  run_steps(*s.session, steps, repeats());
  if (!graphs()) {
    EXPECT_EQ(s.engine->enqueue_count(), static_cast<std::uint64_t>(calls));
  }
}

// A repeat is covered by the session's completion like any call (Note [repeated calls]: "then the
// completion event, as the full path would queue them"), checked while it is still in flight: behind
// 30 ms of caller work on stream 0, the repeat's engine is yet to run when a call on stream 1 takes
// its output as input x. That engine must wait for the repeat's, which it finds through the
// completion event; nothing is synchronized before both calls are queued.
TEST_P(ReplayFastPathModesGpu, ARepeatStillInFlightOrdersTheNextCallOnAnotherStream) {
  auto s = make_session("elementwise min=1x256 max=64x256", options());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  // Graph mode: eager, then captured (the call kept); eager: the first call is kept.
  for (int call = 0; call < (graphs() ? 2 : 1); ++call) TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));
  const std::uint64_t repeats_before = s.session->stats().*repeats();
  io.refresh();
  TRTET_ASSERT_OK(launch_spin(30'000'000, 1, streams_[0]));  // the caller's work ahead of the repeat
  TRTET_ASSERT_OK(execute_on(streams_[0], *s.session, io.args()));
  ASSERT_EQ(s.session->stats().*repeats(), repeats_before + 1) << "the call was not a repeat";
  OwnedTensor y(Memory::kDevice, io.shape), out(Memory::kDevice, io.shape);
  const std::vector<float> yv = random_floats(io.xv.size(), fresh_seed());
  y.write(yv);
  out.poison();
  TensorView next[3] = {io.out->view(), y.view(), out.view()};
  TRTET_ASSERT_OK(execute_on(streams_[1], *s.session, next));
  ASSERT_EQ(cudaStreamSynchronize(streams_[1]), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(streams_[0]), cudaSuccess);
  ASSERT_TRUE(io.out_matches()) << "the repeat";
  EXPECT_TRUE(axpby_matches(out.read(), io.out->read(), yv, 2.0f, -0.5f))
      << "the call on stream 1 read the repeat's output before the repeat's engine wrote it";
}

INSTANTIATE_TEST_SUITE_P(Modes, ReplayFastPathModesGpu, ::testing::Bool(),
                         [](const auto& info) { return info.param ? std::string("Graphs") : std::string("Eager"); });

// ---- Graph mode ----------------------------------------------------------------------------------

TEST_F(ReplayFastPathGpu, AnOutputOfAnotherCapacityOrTypeIsNotARepeat) {
  auto s = make_session("elementwise min=1x256 max=64x256", graphs_on());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256}, /*out_capacity_elements=*/64 * 256);
  ASSERT_TRUE(calls_repeat(*s.session, io, streams_[0], 3, &ex::delegate::SessionStats::repeated_replays, 1));
  // The same address with a smaller capacity: checked in full (and still large enough).
  io.refresh();
  io.views[2].capacity_bytes = 16 * 256 * sizeof(float);
  TRTET_ASSERT_OK(execute_on(streams_[0], *s.session, io.args()));
  ASSERT_EQ(cudaStreamSynchronize(streams_[0]), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().repeated_replays, 1u);
  // Too small now: the full path rejects it, and the next good call is right.
  io.views[2].capacity_bytes = 16 * 256 * sizeof(float) - 4;
  const ex::Status rejected = execute_on(streams_[0], *s.session, io.args());
  EXPECT_EQ(rejected.code(), ex::ErrorCode::kInvalidArgument) << rejected.to_string();
  io.views[2].dtype = ex::DataType::kFloat16;  // a type the engine does not produce
  io.views[2].capacity_bytes = 64 * 256 * sizeof(float);
  const ex::Status wrong_type = execute_on(streams_[0], *s.session, io.args());
  EXPECT_FALSE(wrong_type.ok());
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));  // views rebuilt from the tensors
  EXPECT_TRUE(io.out_matches());
}

TEST_F(ReplayFastPathGpu, ACallersCaptureAfterRepeatsRecordsTheCallAndLaterCallsStayRight) {
  // Eager, captured, then two repeats before the caller's capture.
  capture_after_repeats(streams_[0], graphs_on(), 4, &ex::delegate::SessionStats::repeated_replays, 2);
}

TEST_F(ReplayFastPathGpu, TwoThreadsOnTheirOwnStreamsInterleaveAndStayRight) {
  two_threads_interleave({streams_[0], streams_[1]}, graphs_on());
}

TEST_F(ReplayFastPathGpu, TrimmingAndDestroyEndTheRepeat) {
  auto s = make_session("elementwise min=1x256 max=64x256", graphs_on());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  ASSERT_TRUE(calls_repeat(*s.session, io, streams_[0], 3, &ex::delegate::SessionStats::repeated_replays, 1));
  TRTET_ASSERT_OK(s.session->release_unused_memory());
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().repeated_replays, 1u) << "the call after release_unused_memory is prepared in full";
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().repeated_replays, 2u);
  s.session->destroy();
  const ex::Status after = execute_on(streams_[0], *s.session, io.args());
  EXPECT_EQ(after.code(), ex::ErrorCode::kInvalidState) << after.to_string();
}

// ---- Eager calls ---------------------------------------------------------------------------------

TEST_F(ReplayFastPathGpu, EagerARejectedCallEndsTheRepeatAndTheNextGoodCallIsRight) {
  auto s = make_session("elementwise min=1x256 max=64x256", graphs_off());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  ASSERT_TRUE(calls_repeat(*s.session, io, streams_[0], 3, &ex::delegate::SessionStats::repeated_enqueues, 2));
  const ex::Status short_count = execute_on(streams_[0], *s.session, io.args(), 2);
  EXPECT_EQ(short_count.code(), ex::ErrorCode::kInvalidArgument) << short_count.to_string();
  const std::uint64_t enqueues = s.engine->enqueue_count();
  io.views[0].shape = Shape{65, 256};  // beyond the profile
  const ex::Status too_big = execute_on(streams_[0], *s.session, io.args());
  EXPECT_FALSE(too_big.ok());
  EXPECT_EQ(s.engine->enqueue_count(), enqueues) << "a rejected call enqueued the engine";
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));  // views rebuilt: prepared in full
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().repeated_enqueues, 2u);
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().repeated_enqueues, 3u);
}

TEST_F(ReplayFastPathGpu, EagerAnEngineThatThrowsInARepeatFailsTheCallAndTheNextIsRight) {
  auto engine = ProbeEngine::create(0, Shape{1}, Shape{65536});
  TRTET_ASSERT_OK(engine);
  ProbeEngine* probe = engine->get();
  auto s = make_session(std::unique_ptr<TestEngine>(std::move(engine).value()), graphs_off());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{4096});
  ASSERT_TRUE(calls_repeat(*s.session, io, streams_[0], 2, &ex::delegate::SessionStats::repeated_enqueues, 1));
  probe->throw_in.store(ProbeEngine::Throw::kEnqueue);
  // The exception passes through the session (the one fence is at the ExecuTorch boundary).
  const std::optional<std::string> escaped =
      escaped_exception([&] { (void)execute_on(streams_[0], *s.session, io.args()); });
  ASSERT_TRUE(escaped.has_value());
  EXPECT_NE(escaped->find(ProbeEngine::kThrowMessage), std::string::npos) << *escaped;
  EXPECT_EQ(probe->throws.load(), 1);
  EXPECT_EQ(s.session->stats().repeated_enqueues, 1u) << "a failed repeat is not counted";
  probe->throw_in.store(ProbeEngine::Throw::kNever);
  for (int call = 0; call < 3; ++call) {
    TRTET_ASSERT_OK(run_and_sync(*s.session, io, streams_[0]));
    ASSERT_TRUE(io.out_matches()) << "call " << call << " after the throw";
  }
  // The call after the throw is prepared in full, the two after it repeat.
  EXPECT_EQ(s.session->stats().repeated_enqueues, 3u);
}

TEST_F(ReplayFastPathGpu, EagerACallersCaptureEndsTheRepeatAndLaterCallsStayRight) {
  capture_after_repeats(streams_[0], graphs_off(), 3, &ex::delegate::SessionStats::repeated_enqueues, 2);
}

TEST_F(ReplayFastPathGpu, EagerTwoThreadsOnTheirOwnStreamsInterleaveAndStayRight) {
  two_threads_interleave({streams_[0], streams_[1]}, graphs_off());
}

}  // namespace
}  // namespace trtet_test
