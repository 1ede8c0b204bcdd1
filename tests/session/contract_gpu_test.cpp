// Every row of the execute contract (docs/DESIGN.md), one test each, with the elementwise engine of real
// kernels: outputs poisoned first, compared with a CPU reference on fresh random data.
#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <utility>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/cuda_test_engine.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;
using ex::delegate::Completion;

class ContractGpu : public StreamGpuTest {
 protected:
  void TearDown() override { EXPECT_EQ(destroy_stream(), cudaSuccess); }
  /// One call first, so lazy module loading and first allocations are not timed.
  static void warm_up(Session& session, AxpbyIo& io, cudaStream_t stream) {
    {
      CudaStreamGuard guard(stream);
      TRTET_ASSERT_OK(session.execute(io.args(), 3));
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    io.refresh();
  }
  /// One unguarded call on throwaway device tensors, then a sync: CUDA loads a kernel's module at
  /// its first launch (lazy loading), and that load waits for the work already on the device, which
  /// would order the engine after the caller's queued work even where the session does not.
  static void load_kernels(Session& session) {
    AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{1, 4});
    TRTET_ASSERT_OK(session.execute(io.args(), 3));
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  }
  /// session.execute(io.args(), 3) under a guard on stream_: its status, and the milliseconds from
  /// just after the guard selected the stream to the call's return.
  std::pair<ex::Status, double> timed_execute(Session& session, AxpbyIo& io) {
    CudaStreamGuard guard(stream_);
    const auto start = Clock::now();
    ex::Status status = session.execute(io.args(), 3);
    return {status, ms_since(start)};
  }
};

// Row 1: no guard, host (pageable) I/O -> ordered after cudaStreamPerThread, outputs ready on return.
// The engine gets the session's own stream, never a default-stream handle. Caller work is queued on
// cudaStreamPerThread first: a 30 ms spin, then a write of input y (device memory; x and out are
// pageable), so the output is right only if the engine ran after that work.
TEST_F(ContractGpu, NoGuardPageableHostIoOutputsReadyOnReturn) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  load_kernels(*s.session);
  const Shape shape{33, 100};
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  OwnedTensor x(Memory::kPageable, shape), y(Memory::kDevice, shape), out(Memory::kPageable, shape);
  const std::vector<float> xv = random_floats(n, fresh_seed()), yv = random_floats(n, fresh_seed());
  x.write(xv);
  y.write(random_floats(n, fresh_seed()));  // what y holds until the caller's write lands
  out.poison();
  auto written = queue_spin_then_write(cudaStreamPerThread, 30000, y, yv);
  TRTET_ASSERT_OK(written);
  TensorView args[3] = {x.view(), y.view(), out.view()};
  TRTET_ASSERT_OK(s.session->execute(args, 3));
  // No synchronization of any kind.
  EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the engine did not wait for cudaStreamPerThread";
  EXPECT_TRUE(is_stream_object(s.engine->last_stream())) << "the engine got a default-stream handle";
  EXPECT_EQ(s.session->stats().last_completion, Completion::kWaitOutputsReady);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
}

TEST_F(ContractGpu, NoGuardPinnedHostIoOutputsReadyOnReturn) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kPinned, Memory::kPinned, Shape{64, 4096});
  TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  EXPECT_TRUE(io.out_matches());
  EXPECT_TRUE(is_stream_object(s.engine->last_stream())) << "the engine got a default-stream handle";
}

// Row 1 with device I/O: outputs ready on return, ordered after the caller's work on
// cudaStreamPerThread (a 30 ms spin, then a write of input x), which is idle on return.
TEST_F(ContractGpu, NoGuardDeviceIoReadyOnReturn) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  load_kernels(*s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{17, 256});
  std::vector<float> xv = random_floats(io.xv.size(), fresh_seed());
  const auto start = Clock::now();
  auto written = queue_spin_then_write(cudaStreamPerThread, 30000, *io.x, xv);
  TRTET_ASSERT_OK(written);
  TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  const double elapsed = ms_since(start);
  EXPECT_EQ(cudaStreamQuery(cudaStreamPerThread), cudaSuccess) << "work still queued after an unguarded execute";
  EXPECT_GE(elapsed, 49.0) << "returned before the caller's 30 ms of work and a 20 ms engine could have finished";
  EXPECT_TRUE(is_stream_object(s.engine->last_stream())) << "the engine got a default-stream handle";
  EXPECT_EQ(s.session->stats().last_completion, Completion::kWaitOutputsReady);
  io.xv = std::move(xv);
  EXPECT_TRUE(io.out_matches()) << "the engine read x before the caller's write on cudaStreamPerThread";
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
}

// Row 2: guard + all device-resident -> returns at once; right after the caller synchronizes.
TEST_F(ContractGpu, GuardDeviceResidentReturnsAtOnceWith50MsEngine) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=50000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 1000});
  warm_up(*s.session, io, stream_);
  const auto [status, elapsed] = timed_execute(*s.session, io);
  TRTET_ASSERT_OK(status);
  EXPECT_LT(elapsed, 1.0) << "execute waited on a 50 ms engine";
  EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady) << "the engine's work should still be running";
  EXPECT_EQ(s.engine->last_stream(), stream_);
  EXPECT_EQ(s.session->stats().last_completion, Completion::kReturnAtOnce);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
}

class ContractHostIoGpu : public ContractGpu, public ::testing::WithParamInterface<Memory> {};

// Row 3: guard + host I/O -> returns when host outputs are written: right without further sync.
TEST_P(ContractHostIoGpu, GuardHostIoReturnsWithHostOutputsWritten) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(GetParam(), GetParam(), Shape{48, 1024});
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  EXPECT_TRUE(io.out_matches());  // no synchronization by the caller
  EXPECT_EQ(s.engine->last_stream(), stream_);
  EXPECT_EQ(s.session->stats().last_completion, Completion::kWaitOutputsReady);
}

// Row 3, host inputs only: returns once the inputs are consumed, before the engine finishes; the
// caller may overwrite its host inputs at once.
TEST_P(ContractHostIoGpu, GuardHostInputsReturnWhenConsumed) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=50000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(GetParam(), Memory::kDevice, Shape{48, 1024});
  warm_up(*s.session, io, stream_);
  const auto [status, elapsed] = timed_execute(*s.session, io);
  TRTET_ASSERT_OK(status);
  EXPECT_LT(elapsed, 25.0) << "execute waited for a 50 ms engine, not only for its inputs";
  EXPECT_EQ(s.session->stats().last_completion, Completion::kWaitInputsConsumed);
  const std::vector<float> x = io.xv, y = io.yv;
  io.x->write(random_floats(x.size(), fresh_seed()));  // the caller reuses its buffers at once
  io.y->write(random_floats(y.size(), fresh_seed()));
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(axpby_matches(io.out->read(), x, y, 2.0f, -0.5f));
}

INSTANTIATE_TEST_SUITE_P(HostMemory, ContractHostIoGpu, ::testing::Values(Memory::kPageable, Memory::kPinned),
                         [](const auto& info) { return std::string(to_string(info.param)); });

/// Rows 4 and 5 capture on a green-context stream: green_ holds a 16-SM partition and the
/// remainder, each with a stream and its probed SMs.
template <typename Param>
class ContractGreenGpu : public ContractGpu, public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    ContractGpu::SetUp();
    if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
    TRTET_SKIP_IF_GREEN_UNSUPPORTED();
    green_.emplace();
    ASSERT_TRUE(green_->ok());
  }
  std::optional<GreenPartitions> green_;
};

// Row 4: guard + device or pinned I/O + capture -> recorded into the caller's graph on a
// green-context stream; 100 replays with new inputs give right outputs, on the partition's SMs.
class ContractCaptureGpu : public ContractGreenGpu<Memory> {};

TEST_P(ContractCaptureGpu, CapturedOnGreenStreamReplayed100Times) {
  auto s = make_session("elementwise min=1x4 max=64x4096 record_sms=1");
  ASSERT_TRUE(s.session);
  CudaTestEngine* engine = s.cuda_engine();
  AxpbyIo io(GetParam(), GetParam(), Shape{32, 2048});
  warm_up(*s.session, io, green_->small);  // staging is made before the capture
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  const auto enqueues = engine->enqueue_count();

  ASSERT_EQ(cudaStreamBeginCapture(green_->small, cudaStreamCaptureModeGlobal), cudaSuccess);
  const ex::Status captured = execute_on(green_->small, *s.session, io.args());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(green_->small, &graph), cudaSuccess);
  TRTET_ASSERT_OK(captured);
  EXPECT_EQ(engine->enqueue_count(), enqueues + 1);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

  for (int replay = 0; replay < 100; ++replay) {
    ASSERT_TRUE(replay_and_check(exec, green_->small, io)) << "replay " << replay;
  }
  EXPECT_EQ(engine->enqueue_count(), enqueues + 1) << "replays must not call the engine";
  auto sms = engine->recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_FALSE(sms->empty());
  EXPECT_TRUE(is_subset(*sms, green_->small_sms)) << "the graph ran outside its 16-SM partition";
  EXPECT_LE(sms->size(), green_->partitions[0].granted_sms());
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(DeviceOrPinned, ContractCaptureGpu, ::testing::Values(Memory::kDevice, Memory::kPinned),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Row 5: guard + pageable host I/O + capture -> clear error, nothing enqueued, the capture ends
// cleanly and instantiates.
class ContractPageableCaptureGpu : public ContractGreenGpu<int> {};

TEST_P(ContractPageableCaptureGpu, PageableDuringCaptureIsRejectedAndCaptureStaysValid) {
  auto s = make_session("elementwise min=1x4 max=64x4096");
  ASSERT_TRUE(s.session);
  const int pageable_arg = GetParam();  // 0: input x pageable, 2: output pageable
  AxpbyIo io(pageable_arg == 0 ? Memory::kPageable : Memory::kDevice,
             pageable_arg == 2 ? Memory::kPageable : Memory::kDevice, Shape{8, 64});
  ASSERT_EQ(cudaStreamBeginCapture(green_->small, cudaStreamCaptureModeGlobal), cudaSuccess);
  const ex::Status status = execute_on(green_->small, *s.session, io.args());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(green_->small, &graph), cudaSuccess) << "the failed call broke the capture";
  TRTET_EXPECT_ERROR(status, ex::ErrorCode::kInvalidArgument, "pageable");
  EXPECT_EQ(s.engine->enqueue_count(), 0u);
  std::size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u) << "work was captured by a rejected call";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_TRUE(io.out->poison_intact());
  // The session is still usable, outside the capture.
  {
    CudaStreamGuard guard(green_->small);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(green_->small), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
}

INSTANTIATE_TEST_SUITE_P(InputOrOutput, ContractPageableCaptureGpu, ::testing::Values(0, 2),
                         [](const auto& info) { return info.param == 0 ? std::string("Input") : std::string("Output"); });

// The selected stream must be on the engine's device: checked before any work.
TEST_F(ContractGpu, StreamOnAnotherDeviceIsRejectedBeforeAnyWork) {
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs 2 GPUs";
  auto s = make_session("elementwise min=1x4 max=64x4096");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{8, 64});
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const ex::Status status = execute_on(other, *s.session, io.args());
  TRTET_EXPECT_ERROR(status, ex::ErrorCode::kInvalidArgument, "belongs to device 1");
  EXPECT_EQ(s.engine->enqueue_count(), 0u);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0) << "execute changed the caller's current device";
  EXPECT_TRUE(io.out->poison_intact());
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}

}  // namespace
}  // namespace trtet_test
