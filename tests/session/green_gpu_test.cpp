// Green contexts: the engine (auxiliary streams included) stays on its partition's SMs; a busy
// neighbour partition delays neither execute (growing staging) nor destroy; a call with host I/O
// never waits for another session's long engine on another green context.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "cuda/stream_facts.h"
#include "session/session_fixture.h"
#include "engines/aux_stream_engine.h"
#include "engines/kernels.h"
#include "green/probe.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

/// Runs `body` on a thread of its own until it returns false or stop(); stop() (or leaving the
/// scope, also through a failed ASSERT) joins it.
class BackgroundLoop {
 public:
  explicit BackgroundLoop(std::function<bool()> body)
      : body_(std::move(body)), thread_([this] {
          while (!stop_.load()) {
            if (!body_()) break;
          }
        }) {}
  ~BackgroundLoop() { stop(); }
  BackgroundLoop(const BackgroundLoop&) = delete;  // owns a thread
  BackgroundLoop& operator=(const BackgroundLoop&) = delete;
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::function<bool()> body_;
  std::thread thread_;
};

/// Every test of these suites makes green contexts.
class DelegateGreenGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  }
};

TEST_F(DelegateGreenGpu, ElementwiseEngineRunsOnlyOnThe16SmPartition) {
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  ASSERT_EQ(green.partitions[0].granted_sms(), 16u);
  EXPECT_EQ(ex::green::shared_sms(green.small_sms, green.rest_sms), 0u);
  auto s = make_session("elementwise min=1x4 max=64x4096 kernels=4 record_sms=1");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 4096});
  {
    CudaStreamGuard guard(green.small);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(green.small), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
  auto sms = s.cuda_engine()->recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_FALSE(sms->empty());
  EXPECT_LE(sms->size(), 16u);
  EXPECT_TRUE(is_subset(*sms, green.small_sms)) << "engine kernels escaped the 16-SM partition";
}

TEST_F(DelegateGreenGpu, AuxStreamEngineIncludingAuxStreamsRunsOnlyOnThe16SmPartition) {
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto s = make_session("aux min=1 max=1048576 spin_us=200 record_sms=1");
  ASSERT_TRUE(s.session);
  auto* engine = dynamic_cast<AuxStreamEngine*>(s.engine);
  ASSERT_NE(engine, nullptr);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{1 << 20});
  {
    CudaStreamGuard guard(green.small);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(green.small), cudaSuccess);  // the engine joined its aux streams
  EXPECT_TRUE(io.out_matches());
  ASSERT_EQ(engine->aux_streams().size(), 2u);
  for (cudaStream_t aux : engine->aux_streams()) {
    auto ctx = ex::cuda::stream_green_context(aux);
    TRTET_ASSERT_OK(ctx);
    EXPECT_EQ(*ctx, green.partitions[0].context.get()) << "aux stream not made on the caller's green context";
  }
  auto sms = engine->recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_FALSE(sms->empty());
  EXPECT_TRUE(is_subset(*sms, green.small_sms)) << "aux-stream kernels escaped the 16-SM partition";

  // Moving to the other partition hands the engine that partition's aux streams.
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  io.refresh();
  {
    CudaStreamGuard guard(green.rest);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(green.rest), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(engine->set_aux_streams_count(), 2);
  for (cudaStream_t aux : engine->aux_streams()) {
    auto ctx = ex::cuda::stream_green_context(aux);
    TRTET_ASSERT_OK(ctx);
    EXPECT_EQ(*ctx, green.partitions[1].context.get());
  }
  auto rest_sms = engine->recorded_sms();
  TRTET_ASSERT_OK(rest_sms);
  EXPECT_TRUE(is_subset(*rest_sms, green.rest_sms));
}

// While the 16-SM partition runs 100 ms of kernels, an execute on the remainder that grows its
// staging buffers, then destroy, each return in under 5 ms.
class BusyNeighbourGpu : public DelegateGreenGpu, public ::testing::WithParamInterface<Memory> {};

TEST_P(BusyNeighbourGpu, GrowingExecuteAndDestroyDoNotWaitForAnotherGreenContext) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto s = make_session("elementwise min=1 max=1048576");
  ASSERT_TRUE(s.session);
  AxpbyIo small_io(GetParam(), GetParam(), Shape{1024});
  AxpbyIo large_io(GetParam(), GetParam(), Shape{1 << 18});  // allocated before the aggressor starts
  {
    CudaStreamGuard guard(green.rest);
    TRTET_ASSERT_OK(s.session->execute(small_io.args(), 3));  // staging for 1024 elements
  }
  ASSERT_EQ(cudaStreamSynchronize(green.rest), cudaSuccess);
  const auto grows_before = s.session->stats().staging_grows;

  // The aggressor: every SM of the small partition busy for 100 ms.
  TRTET_ASSERT_OK(launch_spin(100'000'000, static_cast<int>(green.partitions[0].granted_sms()) * 8, green.small));
  double execute_ms = 0;
  {
    CudaStreamGuard guard(green.rest);
    const auto start = Clock::now();
    TRTET_ASSERT_OK(s.session->execute(large_io.args(), 3));
    execute_ms = ms_since(start);
  }
  EXPECT_GT(s.session->stats().staging_grows, grows_before) << "the call was meant to grow the staging";
  EXPECT_TRUE(large_io.out_matches());
  const auto destroy_start = Clock::now();
  s.session->destroy();
  const double destroy_ms = ms_since(destroy_start);
  EXPECT_EQ(cudaStreamQuery(green.small), cudaErrorNotReady) << "the aggressor finished early: nothing was proven";
  EXPECT_LT(execute_ms, 5.0) << "execute waited for the other green context";
  EXPECT_LT(destroy_ms, 5.0) << "destroy waited for the other green context";
  ASSERT_EQ(cudaStreamSynchronize(green.small), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(HostMemory, BusyNeighbourGpu, ::testing::Values(Memory::kPinned, Memory::kPageable),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// ---- Isolation: host I/O of one session never waits for another session's engine ----------------
using IsolationGpu = StreamGpuTest;

// A call with 4 MiB pageable input and output on a 16-SM green context does not wait for another
// session's 100 ms engine (also 4 MiB pageable I/O) running in another thread on the disjoint
// remainder: host copies of one call never hold those of another (the process-wide host-copy pool
// serves several calls at once, not one at a time).
TEST_F(IsolationGpu, HostIoCallDoesNotWaitForAnotherSessionsLongEngineOnAnotherGreenContext) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto victim = make_session("elementwise min=1 max=1048576");
  auto hog = make_session("elementwise min=1 max=1048576 spin_us=100000");
  ASSERT_TRUE(victim.session && hog.session);
  constexpr std::int64_t kN = 1 << 20;  // 4 MiB of float32 per tensor
  AxpbyIo victim_io(Memory::kPageable, Memory::kPageable, Shape{kN});
  AxpbyIo hog_io(Memory::kPageable, Memory::kPageable, Shape{kN});
  {  // warm-up: staging, module loading
    CudaStreamGuard guard(green.small);
    TRTET_ASSERT_OK(victim.session->execute(victim_io.args(), 3));
  }
  ASSERT_TRUE(victim_io.out_matches());
  {
    CudaStreamGuard guard(green.rest);
    TRTET_ASSERT_OK(hog.session->execute(hog_io.args(), 3));
  }
  ASSERT_TRUE(hog_io.out_matches());

  std::atomic<int> hog_calls{0};
  ex::Status hog_status;  // written by the loop, read after stop()
  BackgroundLoop hog_loop([&] {
    CudaStreamGuard guard(green.rest);
    hog_status = hog.session->execute(hog_io.args(), 3);
    if (!hog_status.ok()) return false;
    hog_calls.fetch_add(1);
    return true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the long engine is running
  const int hog_before = hog_calls.load();
  std::vector<double> latency_ms;
  for (int call = 0; call < 50; ++call) {
    victim_io.refresh();
    const auto start = Clock::now();
    {
      CudaStreamGuard guard(green.small);
      TRTET_ASSERT_OK(victim.session->execute(victim_io.args(), 3));
    }
    latency_ms.push_back(ms_since(start));
    ASSERT_TRUE(victim_io.out_matches()) << "call " << call;
  }
  const int hog_during = hog_calls.load() - hog_before;
  hog_loop.stop();
  TRTET_ASSERT_OK(hog_status);
  ASSERT_GE(hog_during, 2) << "the 100 ms engine hardly ran beside the measured calls: nothing was proven";
  std::sort(latency_ms.begin(), latency_ms.end());
  const double p50 = latency_ms[latency_ms.size() / 2];
  const double p98 = latency_ms[latency_ms.size() - 2];  // all but the slowest call
  EXPECT_LT(p98, 20.0) << "calls with 4 MiB pageable I/O on a 16-SM green context waited for another session's 100 ms "
                          "engine on a disjoint green context: latency p50 "
                       << p50 << " ms, p98 " << p98 << " ms, max " << latency_ms.back() << " ms";
}

}  // namespace
}  // namespace trtet_test
