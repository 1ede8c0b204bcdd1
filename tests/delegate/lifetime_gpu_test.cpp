// Lifetime: destroy waits for the session's own work by event; destroy while another thread
// executes is safe; execute after destroy is kInvalidState.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "delegate/session_fixture.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

class LifetimeGpu : public StreamGpuTest {};

TEST_F(LifetimeGpu, DestroyWaitsForInFlightWork) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{8, 64});
  const auto start = Clock::now();
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  s.session->destroy();
  EXPECT_GE(ms_since(start), 19.0) << "destroy returned while the engine could still be running";
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
  ex::Status after = s.session->execute(io.args(), 3);
  EXPECT_EQ(after.code(), ex::ErrorCode::kInvalidState) << after.to_string();
}

TEST_F(LifetimeGpu, DestroyWhileAnotherThreadExecutesIsSafe) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=500");
  ASSERT_TRUE(s.session);
  std::atomic<int> succeeded{0};
  std::atomic<bool> started{false};
  ex::Status last;
  std::thread worker([&] {
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      started.store(true);
      return;
    }
    AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{8, 64});
    {
      CudaStreamGuard guard(stream);
      for (int i = 0; i < 100000; ++i) {
        last = s.session->execute(io.args(), 3);
        started.store(true);
        if (!last.ok()) break;
        succeeded.fetch_add(1);
      }
    }
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.session->destroy();
  worker.join();
  EXPECT_GT(succeeded.load(), 0);
  EXPECT_EQ(last.code(), ex::ErrorCode::kInvalidState) << last.to_string();
  TensorView args[3];
  EXPECT_EQ(s.session->execute(args, 3).code(), ex::ErrorCode::kInvalidState);
}

TEST_F(LifetimeGpu, SessionDestructorAfterDestroyIsHarmless) {
  auto s = make_session("aux min=1 max=4096");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kPageable, Memory::kPageable, Shape{4096});
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  EXPECT_TRUE(io.out_matches());
  s.session->destroy();
  s.session.reset();  // the destructor destroys again: a no-op
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace trtet_test
