// Delegate-owned CUDA graphs (use_cuda_graphs, Note [delegate graphs] in session/graph_cache.h):
// right outputs against the CPU reference over shape, address, profile and memory-kind changes;
// the first call of a signature eager, the second captured, every later one a replay that never
// calls the engine; replays on a green-context stream stay in the partition; the caller's own
// capture records the call as usual; the cache keeps at most its capacity; a full cache takes new
// signatures into the graphs it holds without waiting for other streams.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

ex::delegate::SessionOptions graphs_on(std::size_t cache = 16) {
  ex::delegate::SessionOptions options;
  options.use_cuda_graphs = true;
  options.graph_cache_size = cache;
  return options;
}

class GraphsGpu : public StreamGpuTest {
 protected:
  ex::Status run(Session& session, AxpbyIo& io, cudaStream_t stream) { return run_and_sync(session, io, stream); }
};

TEST_F(GraphsGpu, SecondCallCapturesAndLaterCallsReplayWithoutTheEngine) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=20", graphs_on());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{32, 256});
  TRTET_ASSERT_OK(run(*s.session, io, stream_));
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().graph_captures, 0u) << "the first call of a signature runs eagerly";
  EXPECT_EQ(s.engine->enqueue_count(), 1u);
  for (int call = 1; call < 12; ++call) {
    TRTET_ASSERT_OK(run(*s.session, io, stream_));
    ASSERT_TRUE(io.out_matches()) << "call " << call;
  }
  EXPECT_EQ(s.session->stats().graph_captures, 1u);
  EXPECT_EQ(s.session->stats().graph_launches, 11u);
  EXPECT_EQ(s.engine->enqueue_count(), 2u) << "one eager call and one captured enqueue; replays skip the engine";
}

TEST_F(GraphsGpu, ShapeAddressAndMemoryKindChangesStayRight) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=4", graphs_on());
  ASSERT_TRUE(s.session);
  AxpbyIo a(Memory::kDevice, Memory::kDevice, Shape{8, 256});
  AxpbyIo b(Memory::kDevice, Memory::kDevice, Shape{64, 256});
  AxpbyIo pinned(Memory::kPinned, Memory::kPinned, Shape{16, 256});
  AxpbyIo pageable(Memory::kPageable, Memory::kPageable, Shape{24, 256});
  AxpbyIo mixed(Memory::kPageable, Memory::kDevice, Shape{40, 256});
  AxpbyIo* order[] = {&a, &b, &pinned, &pageable, &mixed, &a, &b, &pinned, &pageable, &mixed, &b, &a, &mixed};
  int call = 0;
  for (int round = 0; round < 3; ++round) {
    for (AxpbyIo* io : order) {
      TRTET_ASSERT_OK(run(*s.session, *io, stream_));
      ASSERT_TRUE(io->out_matches()) << "call " << call << " (" << io->shape.to_string() << ")";
      ++call;
    }
  }
  // Five signatures, and a few more while staging grows in the first round (staging addresses are
  // part of a signature): each captured once it repeats, replayed after.
  EXPECT_GE(s.session->stats().graph_captures, 5u);
  EXPECT_LE(s.session->stats().graph_captures, 9u);
  EXPECT_GT(s.session->stats().graph_launches, 25u);
}

TEST_F(GraphsGpu, ReplaysOnAGreenContextStreamStayInThePartition) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto s = make_session("elementwise min=1x4 max=64x4096 record_sms=1 kernels=3", graphs_on());
  ASSERT_TRUE(s.session);
  CudaTestEngine* engine = s.cuda_engine();
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 4096});
  TRTET_ASSERT_OK(run(*s.session, io, green.small));  // eager
  TRTET_ASSERT_OK(run(*s.session, io, green.small));  // captured and launched
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  for (int replay = 0; replay < 20; ++replay) {
    TRTET_ASSERT_OK(run(*s.session, io, green.small));
    ASSERT_TRUE(io.out_matches()) << "replay " << replay;
  }
  EXPECT_EQ(s.session->stats().graph_captures, 1u);
  auto sms = engine->recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_FALSE(sms->empty()) << "the replays recorded no SM";
  EXPECT_TRUE(is_subset(*sms, green.small_sms)) << "a replay ran outside the 16-SM partition";
  // The same call on the rest of the GPU: another green context, so another graph.
  TRTET_ASSERT_OK(run(*s.session, io, green.rest));
  TRTET_ASSERT_OK(run(*s.session, io, green.rest));
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().graph_captures, 2u);
}

TEST_F(GraphsGpu, TheCallersOwnCaptureRecordsTheCallAsUsual) {
  auto s = make_session("elementwise min=1x256 max=64x256 kernels=2", graphs_on());
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  TRTET_ASSERT_OK(run(*s.session, io, stream_));
  TRTET_ASSERT_OK(run(*s.session, io, stream_));  // a delegate graph exists now
  const auto launches = s.session->stats().graph_launches;
  const CapturedCall call = capture_call(stream_, *s.session, io.args());
  cudaGraph_t graph = call.graph;
  const ex::Status& captured = call.status;
  ASSERT_EQ(call.ended, cudaSuccess);
  TRTET_ASSERT_OK(captured);
  EXPECT_EQ(s.session->stats().graph_launches, launches) << "inside the caller's capture no delegate graph is launched";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 5; ++replay) {
    ASSERT_TRUE(replay_and_check(exec, stream_, io)) << "replay " << replay;
  }
  TRTET_ASSERT_OK(run(*s.session, io, stream_));  // an eager call after the caller's replays
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(GraphsGpu, TheCacheKeepsAtMostItsCapacity) {
  auto s = make_session("elementwise min=1x256 max=64x256", graphs_on(2));
  ASSERT_TRUE(s.session);
  AxpbyIo a(Memory::kDevice, Memory::kDevice, Shape{8, 256});
  AxpbyIo b(Memory::kDevice, Memory::kDevice, Shape{16, 256});
  AxpbyIo c(Memory::kDevice, Memory::kDevice, Shape{32, 256});
  auto run_all = [&](std::initializer_list<AxpbyIo*> ios, int rounds) {
    for (int round = 0; round < rounds; ++round) {
      for (AxpbyIo* io : ios) {
        TRTET_ASSERT_OK(run(*s.session, *io, stream_));
        ASSERT_TRUE(io->out_matches()) << io->shape.to_string() << ", round " << round;
      }
    }
  };
  // Two signatures fit: each eager, then captured, then replayed without the engine.
  ASSERT_NO_FATAL_FAILURE(run_all({&a, &b}, 3));
  EXPECT_EQ(s.session->stats().graph_captures, 2u) << "two signatures in a cache of two were not kept";
  EXPECT_EQ(s.session->stats().graph_launches, 4u);
  EXPECT_EQ(s.engine->enqueue_count(), 4u) << "two eager calls and two captured enqueues";
  // Three signatures cycling through two slots: each is evicted before it comes back (a's graph
  // too), so none is seen twice in a row of the cache: nothing more is captured, every call is eager.
  ASSERT_NO_FATAL_FAILURE(run_all({&c, &a, &b}, 4));
  EXPECT_EQ(s.session->stats().graph_captures, 2u);
  EXPECT_EQ(s.session->stats().graph_launches, 4u) << "a graph outlived the cache's capacity";
  EXPECT_EQ(s.engine->enqueue_count(), 16u);
}

// Note [no graph destroyed in a call] (session/graph_cache.h): cudaGraphExecDestroy of a graph
// captured across streams waits for every stream of the device. A full cache hands its least
// recently used entry's graph to a new signature, which updates it in place; each call is checked,
// right when it returns, to have left another stream's queued spin running. For an engine of
// kernels on one stream and for one that forks to auxiliary streams and joins back (as TensorRT's
// with setAuxStreams; the kind whose graph's destroy was seen waiting).
struct FullCacheCase {
  const char* name;
  const char* spec;
  Shape a, b, c;  ///< three signatures; a fourth has a's shape at other addresses
};

class FullCacheGpu : public GraphsGpu, public ::testing::WithParamInterface<FullCacheCase> {};

TEST_P(FullCacheGpu, TakesNewSignaturesWithoutWaitingForOtherStreams) {
  constexpr std::int64_t kHoldNs = 200'000'000;
  const FullCacheCase& param = GetParam();
  auto s = make_session(param.spec, graphs_on(2));
  ASSERT_TRUE(s.session);
  AxpbyIo a(Memory::kDevice, Memory::kDevice, param.a);
  AxpbyIo b(Memory::kDevice, Memory::kDevice, param.b);
  AxpbyIo c(Memory::kDevice, Memory::kDevice, param.c);
  AxpbyIo d(Memory::kDevice, Memory::kDevice, param.a);
  for (int round = 0; round < 3; ++round) {
    for (AxpbyIo* io : {&a, &b}) {
      TRTET_ASSERT_OK(run(*s.session, *io, stream_));
      ASSERT_TRUE(io->out_matches()) << io->shape.to_string() << ", round " << round;
    }
  }
  ASSERT_EQ(s.session->stats().graph_captures, 2u) << "the cache should be full of graphs";
  cudaStream_t held = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking), cudaSuccess);
  TRTET_ASSERT_OK(trtet_test::launch_spin(1000, 1, held));  // loads the spin kernel before any hold
  ASSERT_EQ(cudaStreamSynchronize(held), cudaSuccess);
  int call = 0;
  // First sight of c takes a's entry (its graph kept as a spare), the second captures into that
  // graph, the third replays it; then d the same with b's entry; then a comes back into c's.
  for (AxpbyIo* io : {&c, &c, &c, &d, &d, &d, &a, &a, &a}) {
    io->refresh();
    TRTET_ASSERT_OK(trtet_test::launch_spin(kHoldNs, 1, held));
    const ex::Status status = execute_on(stream_, *s.session, io->args());
    const cudaError_t held_now = cudaStreamQuery(held);  // the promise, when the call returns
    TRTET_ASSERT_OK(status);
    EXPECT_EQ(held_now, cudaErrorNotReady) << "call " << call << " waited for another stream's work";
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ASSERT_TRUE(io->out_matches()) << "call " << call << " (" << io->shape.to_string() << ")";
    ASSERT_EQ(cudaStreamSynchronize(held), cudaSuccess);
    ++call;
  }
  EXPECT_EQ(cudaStreamDestroy(held), cudaSuccess);
  EXPECT_EQ(s.session->stats().graph_captures, 5u) << "c, d and a again captured into the graphs the cache held";
  EXPECT_EQ(s.session->stats().graph_launches, 10u);
  EXPECT_EQ(s.engine->enqueue_count(), 4u + 6u) << "a and b: 2 each; then per signature one eager call and one capture";
}

INSTANTIATE_TEST_SUITE_P(Engines, FullCacheGpu,
                         ::testing::Values(FullCacheCase{"OneStream", "elementwise min=1x256 max=64x256 kernels=4",
                                                         Shape{8, 256}, Shape{16, 256}, Shape{32, 256}},
                                           FullCacheCase{"AuxStreams", "aux min=1 max=65536", Shape{2048},
                                                         Shape{4096}, Shape{8192}}),
                         [](const ::testing::TestParamInfo<FullCacheCase>& info) { return info.param.name; });

TEST_F(GraphsGpu, ProfilesAndGraphsTogether) {
  AxpbyIo small(Memory::kDevice, Memory::kDevice, Shape{8, 256});   // profile 0
  AxpbyIo large(Memory::kDevice, Memory::kDevice, Shape{48, 256});  // profile 1
  auto s = make_session("elementwise min=1x256 max=16x256 profiles=17x256:64x256 kernels=2", graphs_on());
  ASSERT_TRUE(s.session);
  for (int call = 0; call < 10; ++call) {
    AxpbyIo& io = call % 2 == 0 ? small : large;
    TRTET_ASSERT_OK(run(*s.session, io, stream_));
    ASSERT_TRUE(io.out_matches()) << "call " << call;
  }
  EXPECT_EQ(s.session->stats().graph_captures, 2u);
  EXPECT_EQ(s.session->stats().graph_launches, 8u);
}

}  // namespace
}  // namespace trtet_test
