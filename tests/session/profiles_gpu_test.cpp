// Several optimization profiles on the GPU: every profile reached with right outputs, the tightest
// chosen, switching back and forth on one stream and across streams, and capture: a profile used
// before may be captured and replayed; a profile's first use during a capture is refused, enqueues
// nothing, and leaves the capture valid.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/elementwise_engine.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

// Profile 0: [1..16] x 256; profile 1: [17..32] x 256; profile 2: [1..64] x 256 (holds the others'
// shapes too, but is the loosest: only shapes of 33..64 rows choose it).
constexpr const char* kSpec = "elementwise min=1x256 max=16x256 profiles=17x256:32x256,1x256:64x256 spin_us=200";

/// kSpec's bindings and profiles with an output that depends on the profile the engine runs, as a
/// TensorRT engine's may: out = (2 + p)*x - 0.5*y on profile p, the coefficient read when the
/// engine is enqueued (and so baked into a graph that captures it).
class ProfileDependentEngine final : public ElementwiseEngine {
 public:
  static Result<std::unique_ptr<TestEngine>> create() {
    std::unique_ptr<ProfileDependentEngine> engine(new ProfileDependentEngine());
    TRTET_RETURN_IF_ERROR(engine->init_resources());
    engine->add_profile(Shape{17, 256}, Shape{32, 256});
    engine->add_profile(Shape{1, 256}, Shape{64, 256});
    return std::unique_ptr<TestEngine>(std::move(engine));
  }
  static float a(int profile) { return 2.0f + static_cast<float>(profile); }

 protected:
  Status launch(const float* x, const float* y, float* out, std::int64_t n, cudaStream_t stream) override {
    return launch_axpby(x, y, out, n, a(selected_profile()), options_.b, spin_ns(), sm_flags(), stream);
  }

 private:
  ProfileDependentEngine() : ElementwiseEngine(0, Shape{1, 256}, Shape{16, 256}, KernelOptions{}) {}
};

class ProfilesGpu : public StreamGpuTest {
 protected:
  ex::Status run(Session& session, AxpbyIo& io, cudaStream_t stream) { return run_and_sync(session, io, stream); }
};

TEST_F(ProfilesGpu, EveryProfileIsReachedWithRightOutputs) {
  auto s = make_session(kSpec);
  ASSERT_TRUE(s.session);
  ASSERT_EQ(s.engine->profile_count(), 3);
  const struct {
    std::int64_t rows;
    int profile;
  } cases[] = {{8, 0}, {24, 1}, {48, 2}, {16, 0}, {17, 1}, {33, 2}, {1, 0}, {64, 2}};
  for (const auto& c : cases) {
    AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{c.rows, 256});
    TRTET_ASSERT_OK(run(*s.session, io, stream_));
    EXPECT_TRUE(io.out_matches()) << c.rows << " rows";
    EXPECT_EQ(s.engine->selected_profile(), c.profile) << c.rows << " rows: the tightest profile that holds them";
    EXPECT_EQ(s.session->stats().last_profile, c.profile) << c.rows << " rows";
  }
}

TEST_F(ProfilesGpu, SwitchingBackAndForthKeepsEveryCallRight) {
  auto s = make_session(kSpec);
  ASSERT_TRUE(s.session);
  AxpbyIo small(Memory::kPinned, Memory::kPinned, Shape{12, 256});
  AxpbyIo large(Memory::kPinned, Memory::kPinned, Shape{64, 256});  // profile 2
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  for (int round = 0; round < 10; ++round) {
    TRTET_ASSERT_OK(run(*s.session, round % 2 == 0 ? small : large, round % 3 == 0 ? other : stream_));
    ASSERT_TRUE((round % 2 == 0 ? small : large).out_matches()) << "round " << round;
    EXPECT_EQ(s.engine->selected_profile(), round % 2 == 0 ? 0 : 2) << "round " << round;
  }
  EXPECT_EQ(s.session->stats().profile_switches, 9u);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}

TEST_F(ProfilesGpu, ShapesThatFitNoProfileAreRejectedBeforeAnyWork) {
  auto s = make_session(kSpec);
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 256});
  io.views[0].shape = io.views[1].shape = Shape{65, 256};
  io.views[0].capacity_bytes = io.views[1].capacity_bytes = 1u << 20;  // capacity is not the issue
  CudaStreamGuard guard(stream_);
  const ex::Status status = s.session->execute(io.args(), 3);
  TRTET_EXPECT_ERROR(status, ex::ErrorCode::kInvalidArgument, "fit none of the engine's 3 optimization profiles");
  EXPECT_EQ(s.engine->enqueue_count(), 0u);
  EXPECT_EQ(s.engine->select_profile_count(), 0u);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);
}

// The engine's output depends on its profile: the capture must record the call on the profile its
// shapes choose (2), and the eager calls between the replays run on theirs (0).
TEST_F(ProfilesGpu, AProfileUsedBeforeIsCapturedAndReplayedRight) {
  auto engine = ProfileDependentEngine::create();
  TRTET_ASSERT_OK(engine);
  auto s = make_session(std::move(engine).value());
  ASSERT_TRUE(s.session);
  const float large_a = ProfileDependentEngine::a(2), small_a = ProfileDependentEngine::a(0);
  AxpbyIo small(Memory::kDevice, Memory::kDevice, Shape{8, 256});
  AxpbyIo large(Memory::kDevice, Memory::kDevice, Shape{48, 256});
  TRTET_ASSERT_OK(run(*s.session, large, stream_));  // profile 2 used once
  ASSERT_TRUE(large.out_matches(large_a, -0.5f));
  TRTET_ASSERT_OK(run(*s.session, small, stream_));  // back on profile 0
  ASSERT_TRUE(small.out_matches(small_a, -0.5f));
  large.refresh();
  const CapturedCall call = capture_call(stream_, *s.session, large.args());
  cudaGraph_t graph = call.graph;
  const ex::Status& captured = call.status;
  ASSERT_EQ(call.ended, cudaSuccess);
  TRTET_ASSERT_OK(captured);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 5; ++replay) {
    large.refresh();
    ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ASSERT_TRUE(large.out_matches(large_a, -0.5f)) << "replay " << replay << ": not profile 2's output";
    // An eager call on the other profile between replays.
    TRTET_ASSERT_OK(run(*s.session, small, stream_));
    ASSERT_TRUE(small.out_matches(small_a, -0.5f)) << "eager call after replay " << replay;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(ProfilesGpu, AProfilesFirstUseDuringCaptureIsRefusedAndTheCaptureStaysValid) {
  auto s = make_session(kSpec);
  ASSERT_TRUE(s.session);
  AxpbyIo large(Memory::kDevice, Memory::kDevice, Shape{48, 256});
  const CapturedCall call = capture_call(stream_, *s.session, large.args());
  cudaGraph_t graph = call.graph;
  const ex::Status& captured = call.status;
  ASSERT_EQ(call.ended, cudaSuccess) << "the refused call invalidated the capture";
  TRTET_EXPECT_ERROR(captured, ex::ErrorCode::kInvalidArgument, "run the call once before capturing");
  std::size_t nodes = 1;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(s.engine->selected_profile(), 0);
  TRTET_ASSERT_OK(run(*s.session, large, stream_));  // and eagerly it works
  EXPECT_TRUE(large.out_matches());
}

}  // namespace
}  // namespace trtet_test
