// The caller's own captures of a session's calls: a capture on one stream right after an eager
// call on another (still running, or done) records the call and replays right; a capture that is
// the session's first call orders its replays after later eager calls; the staging a
// captured graph was recorded with stays alive when an eager call grows the session's staging.
// Outputs poisoned first, compared with a CPU reference on fresh data.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

// "A guard on a stream being captured: the call is recorded into your capture". After an eager
// call on stream A (still running, or done), a capture on stream B records the call and leaves
// the capture valid, also while the call on A still runs; replays give right outputs; the session
// still works eagerly after them.
class CaptureAfterEagerGpu : public StreamGpuTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CaptureAfterEagerGpu, CaptureOnAnotherStreamIsRecordedAndReplaysRight) {
  const bool in_flight = GetParam();
  OwnedStream b;
  ASSERT_TRUE(b.ok());
  auto s = make_session("elementwise min=1 max=65536 spin_us=50000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{4096});
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));  // eager, on stream A; 50 ms
  }
  const std::vector<float> eager_x = io.xv, eager_y = io.yv;
  if (in_flight) {
    ASSERT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady) << "the eager call ended before the capture began";
  } else {
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ASSERT_TRUE(io.out_matches());
  }

  ASSERT_EQ(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal), cudaSuccess);
  ex::Status captured;
  {
    CudaStreamGuard guard(b);
    captured = s.session->execute(io.args(), 3);
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(b, &graph);
  ASSERT_EQ(ended, cudaSuccess) << "the call left the caller's capture invalid (" << cudaGetErrorString(ended)
                                << "); execute said: " << captured.to_string();
  EXPECT_TRUE(captured.ok()) << "capture on stream B after an eager call on stream A ("
                             << (in_flight ? "still running" : "done") << ") was refused: " << captured.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(axpby_matches(io.out->read(), eager_x, eager_y, 2.0f, -0.5f)) << "the eager call's outputs";
  if (!captured.ok()) {
    cudaGraphDestroy(graph);
    return;
  }
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 5; ++replay) {
    ASSERT_TRUE(replay_and_check(exec, b, io)) << "replay " << replay;
  }
  // The session still works eagerly, on A.
  io.refresh();
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(io.out_matches()) << "eager call after the replays";
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(EarlierCall, CaptureAfterEagerGpu, ::testing::Bool(),
                         [](const auto& info) { return info.param ? std::string("InFlight") : std::string("Done"); });

// A capture that is the session's first call (no warm-up, so nothing is pending when it is
// recorded) still orders each replay after the eager calls queued before that replay, on any
// stream: the graph and those calls share the engine's memory (the aux engine's scratch, as a
// TensorRT context's). Caller work holds the eager call back 100 ms; a replay queued after it on
// another stream must not end before it (the 8-minute soak's seed 2905517958700723711 found such a
// replay rewriting the scratch under the eager call).
class CaptureFirstGpu : public StreamGpuTest {};

TEST_F(CaptureFirstGpu, AReplayIsOrderedAfterAnEagerCallQueuedBeforeIt) {
  OwnedStream b;
  ASSERT_TRUE(b.ok());
  auto s = make_session("aux min=1 max=65536 spin_us=20000");
  ASSERT_TRUE(s.session);
  constexpr std::int64_t kN = 4096;
  AxpbyIo graph_io(Memory::kDevice, Memory::kDevice, Shape{kN});
  CapturedCall captured = capture_call(b, *s.session, graph_io.args());
  ASSERT_EQ(captured.ended, cudaSuccess) << "execute said: " << captured.status.to_string();
  TRTET_ASSERT_OK(captured.status);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, captured.graph, 0), cudaSuccess);
  graph_io.refresh();  // the replay's inputs, written before the eager call is queued

  AxpbyIo eager(Memory::kDevice, Memory::kDevice, Shape{kN});
  const std::vector<float> late_x = fresh_random(kN);
  auto written = queue_spin_then_write(stream_, 100000, *eager.x, late_x);
  TRTET_ASSERT_OK(written);
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(eager.args(), 3));  // device I/O under a guard: returns at once
  }
  ASSERT_EQ(cudaGraphLaunch(exec, b), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess)
      << "the replay ended while the eager call queued before it (100 ms of caller work, then 20 ms of "
         "engine) was still to run: the graph's replays are not ordered after later eager calls";
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(axpby_matches(eager.out->read(), late_x, eager.yv, 2.0f, -0.5f)) << "the eager call's outputs";
  EXPECT_TRUE(graph_io.out_matches()) << "the replay's outputs";
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(captured.graph), cudaSuccess);
}

// A captured graph keeps using the session's staging (pinned I/O is staged through device
// buffers): an eager call that grows the staging leaves the buffers the graph was recorded with
// alive until the graph goes (once, they were freed and later replays used freed memory). Eager
// call on A, capture on B (or, to show this half on its own, on A), replay, eager call on A with a
// bigger shape, then replays (right) and eager calls (right), in turn.
class CapturedStagingGpu : public StreamGpuTest, public ::testing::WithParamInterface<bool /*capture on B*/> {};

TEST_P(CapturedStagingGpu, StagingOfACapturedGraphStaysAliveWhenAnEagerCallGrowsIt) {
  OwnedStream other;
  ASSERT_TRUE(other.ok());
  const cudaStream_t b = GetParam() ? other.get() : stream_;
  constexpr std::int64_t kSmall = 1 << 20;  // 4 MiB per tensor: staging spans whole pool pages
  constexpr std::int64_t kBig = 1 << 22;    // 16 MiB
  auto s = make_session("elementwise min=1 max=4194304");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kPinned, Memory::kPinned, Shape{kSmall});
  AxpbyIo big(Memory::kPinned, Memory::kPinned, Shape{kBig});
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));  // makes staging for kSmall; returns with outputs written
  }
  ASSERT_TRUE(io.out_matches());
  // A live allocation after the staging in the device's pool, so the freed staging cannot merge
  // with free space after it into one block big enough for the grown staging (which would keep
  // the graph's addresses mapped and hide the bug).
  void* spacer = nullptr;
  ASSERT_EQ(cudaMallocAsync(&spacer, std::size_t{2} << 20, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);

  ASSERT_EQ(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal), cudaSuccess);
  ex::Status captured;
  {
    CudaStreamGuard guard(b);
    captured = s.session->execute(io.args(), 3);
  }
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(b, &graph), cudaSuccess) << "execute said: " << captured.to_string();
  TRTET_ASSERT_OK(captured);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_TRUE(replay_and_check(exec, b, io)) << "replay before the growth";

  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(big.args(), 3));
  }
  ASSERT_TRUE(big.out_matches()) << "the eager call that grew the staging (16 MiB per tensor, 4 before)";
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  // Memory freed to a pool goes back to the driver at the pool's discretion; ask for it now, as a
  // pool may do at any synchronization: the device's (the spacer's) and the session's own (its
  // staging), so that staging freed too early would be unmapped and the replays fault.
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  TRTET_ASSERT_OK(s.session->release_unused_memory());

  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(replay_and_check(exec, b, io))
        << "replay " << round << " after an eager call grew the staging (a failed synchronize: the graph's staging "
           "was freed?)";
    big.refresh();
    {
      CudaStreamGuard guard(stream_);
      TRTET_ASSERT_OK(s.session->execute(big.args(), 3));
    }
    ASSERT_TRUE(big.out_matches()) << "eager call " << round << " after the growth";
  }
  EXPECT_EQ(cudaFreeAsync(spacer, stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(CaptureStream, CapturedStagingGpu, ::testing::Bool(),
                         [](const auto& info) { return info.param ? std::string("OtherStream") : std::string("SameStream"); });

}  // namespace
}  // namespace trtet_test
