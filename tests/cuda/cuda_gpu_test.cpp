// GPU tests of the cuda layer: stream facts on real, per-thread and green-context streams;
// owners that allocate; the device guard.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_buffer.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "cuda/pinned_buffer.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::cuda {
namespace {

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override { TRTET_REQUIRE_GPU(); }
};

TEST_F(CudaGpu, FactsOfCreatedStream) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  auto facts = stream_facts(stream);
  TRTET_ASSERT_OK(facts);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(facts->device, current);
  EXPECT_EQ(facts->green_context, nullptr);
  EXPECT_FALSE(facts->capturing);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(CudaGpu, FactsOfPerThreadStream) {
  auto facts = stream_facts(cudaStreamPerThread);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->device, 0);
  EXPECT_EQ(facts->green_context, nullptr);
  EXPECT_FALSE(facts->capturing);
}

TEST_F(CudaGpu, FactsOfGreenContextStream) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto api_or = driver();
  TRTET_ASSERT_OK(api_or);
  const DriverApi& api = **api_or;
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // test-only: initialise the primary context
  CUdevice dev = 0;
  ASSERT_EQ(api.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUdevResource sms{};
  ASSERT_EQ(api.cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  CUdevResource group{};
  CUdevResource rest{};
  unsigned int groups = 1;
  ASSERT_EQ(api.cuDevSmResourceSplitByCount(&group, &groups, &sms, &rest, 0, 16), CUDA_SUCCESS);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(api.cuDevResourceGenerateDesc(&desc, &group, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(api.cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);

  auto facts = stream_facts(reinterpret_cast<cudaStream_t>(stream));
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->device, 0);
  EXPECT_EQ(facts->green_context, green);
  EXPECT_FALSE(facts->capturing);

  ASSERT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGreenCtxDestroy(green), CUDA_SUCCESS);
}

TEST_F(CudaGpu, CaptureStatusTrueOnlyInsideCapture) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  auto before = stream_is_capturing(stream);
  TRTET_ASSERT_OK(before);
  EXPECT_FALSE(*before);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  auto during = stream_is_capturing(stream);
  TRTET_ASSERT_OK(during);
  EXPECT_TRUE(*during);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  auto after = stream_is_capturing(stream);
  TRTET_ASSERT_OK(after);
  EXPECT_FALSE(*after);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(CudaGpu, BuffersAndEventRoundTrip) {
  cudaStream_t stream = cudaStreamPerThread;
  auto host = PinnedBuffer::allocate(1 << 20);
  TRTET_ASSERT_OK(host);
  auto dev = DeviceBuffer::allocate(1 << 20, stream);
  TRTET_ASSERT_OK(dev);
  auto* bytes = static_cast<unsigned char*>(host->data());
  for (int i = 0; i < (1 << 20); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(cudaMemcpyAsync(dev->data(), host->data(), 1 << 20, cudaMemcpyHostToDevice, stream), cudaSuccess);
  auto back = PinnedBuffer::allocate(1 << 20);
  TRTET_ASSERT_OK(back);
  ASSERT_EQ(cudaMemcpyAsync(back->data(), dev->data(), 1 << 20, cudaMemcpyDeviceToHost, stream), cudaSuccess);
  auto done = Event::create();
  TRTET_ASSERT_OK(done);
  TRTET_ASSERT_OK(done->record(stream));
  TRTET_ASSERT_OK(done->synchronize());
  auto q = done->query();
  TRTET_ASSERT_OK(q);
  EXPECT_TRUE(*q);
  EXPECT_EQ(std::memcmp(back->data(), host->data(), 1 << 20), 0);
  DeviceBuffer moved = std::move(dev).value();
  EXPECT_TRUE(moved);
  moved.reset();
  EXPECT_FALSE(moved);
}

TEST_F(CudaGpu, WarnClearsStickyError) {
  const cudaError_t error = cudaSetDevice(1 << 20);  // records a real last error
  ASSERT_NE(error, cudaSuccess);
  TRTET_CUDA_WARN(error);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST_F(CudaGpu, DeviceGuardRestores) {
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  {
    DeviceGuard guard(before);
    TRTET_EXPECT_OK(guard.status());
  }
  {
    DeviceGuard bad(1 << 20);
    EXPECT_FALSE(bad.status().ok());
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
  EXPECT_EQ(check_device_index(-1).code(), ErrorCode::kInvalidArgument);
  TRTET_EXPECT_OK(check_device_index(0));
}

// ---- LeasedPool: pools lent and given back, never destroyed (Note [pools are recycled]) -----------

class LeasedPoolGpu : public ::testing::TestWithParam<PoolKind> {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    auto probe = LeasedPool::take(GetParam(), 0);
    if (probe.status().code() == ErrorCode::kNotSupported) GTEST_SKIP() << probe.status().to_string();
    TRTET_ASSERT_OK(probe);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  /// A lease, asserted.
  LeasedPool take() {
    auto leased = LeasedPool::take(GetParam(), 0);
    EXPECT_TRUE(leased.ok()) << leased.status().to_string();
    return leased.ok() ? std::move(leased).value() : LeasedPool();
  }
  /// `bytes` from `pool`, in order on stream_.
  DeviceBuffer allocate(cudaMemPool_t pool, std::size_t bytes) {
    auto buffer = DeviceBuffer::allocate_from(pool, bytes, stream_);
    EXPECT_TRUE(buffer.ok()) << buffer.status().to_string();
    return buffer.ok() ? std::move(buffer).value() : DeviceBuffer();
  }

  cudaStream_t stream_ = nullptr;
};

constexpr std::size_t kPoolTestBytes = std::size_t{64} << 20;

TEST_P(LeasedPoolGpu, AGivenBackPoolIsLentAgainHoldingNothingWithItsHighsReset) {
  LeasedPool first = take();
  ASSERT_TRUE(first);
  const cudaMemPool_t handle = first.get();
  {
    DeviceBuffer buffer = allocate(handle, kPoolTestBytes);
    ASSERT_TRUE(buffer);
  }  // freed in order on stream_
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  auto kept = pool_usage(handle);
  TRTET_ASSERT_OK(kept);
  EXPECT_GE(kept->reserved, kPoolTestBytes) << "a lent pool keeps what its owner freed";
  EXPECT_GE(kept->used_high, kPoolTestBytes);
  first.reset();
  EXPECT_FALSE(first);
  auto given_back = pool_usage(handle);  // the pool lives on, on the shelf
  TRTET_ASSERT_OK(given_back);
  EXPECT_EQ(given_back->reserved, 0u) << "a given-back pool keeps freed memory";
  const std::size_t made = LeasedPool::pools_made();
  LeasedPool second = take();
  ASSERT_TRUE(second);
  EXPECT_EQ(LeasedPool::pools_made(), made) << "a new pool was made while an idle one was on the shelf";
  auto fresh = pool_usage(second.get());
  TRTET_ASSERT_OK(fresh);
  EXPECT_EQ(fresh->reserved + fresh->used + fresh->reserved_high + fresh->used_high, 0u)
      << "a lent pool's counters do not start from zero";
  // It keeps freed memory again while lent, and allocates from there.
  {
    DeviceBuffer buffer = allocate(second.get(), kPoolTestBytes);
    ASSERT_TRUE(buffer);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  auto again = pool_usage(second.get());
  TRTET_ASSERT_OK(again);
  EXPECT_GE(again->reserved, kPoolTestBytes);
  EXPECT_EQ(again->used, 0u);
}

TEST_P(LeasedPoolGpu, APoolWithMemoryStillAllocatedIsNotLentUntilItIsFreed) {
  LeasedPool first = take();
  ASSERT_TRUE(first);
  const cudaMemPool_t held_pool = first.get();
  DeviceBuffer held = allocate(held_pool, kPoolTestBytes);  // outlives the lease (a graph's staging, say)
  ASSERT_TRUE(held);
  first.reset();
  // Every other idle pool of this kind is lent out first, then a new one is made.
  std::vector<LeasedPool> others;
  for (;;) {
    const std::size_t made = LeasedPool::pools_made();
    others.push_back(take());
    ASSERT_TRUE(others.back());
    EXPECT_NE(others.back().get(), held_pool) << "a pool was lent while memory was still allocated from it";
    if (LeasedPool::pools_made() != made) break;
    ASSERT_LT(others.size(), 64u) << "the shelf never ran out of idle pools";
  }
  // Memory still allocated stays valid and usable after the lease ended.
  ASSERT_EQ(cudaMemsetAsync(held.data(), 0x5a, kPoolTestBytes, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  held.reset();
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  // Freed (and, with nothing kept, released at that synchronization): lent again.
  const std::size_t made = LeasedPool::pools_made();
  LeasedPool again = take();
  ASSERT_TRUE(again);
  EXPECT_EQ(again.get(), held_pool) << "the freed pool was not lent again";
  EXPECT_EQ(LeasedPool::pools_made(), made);
}

TEST_P(LeasedPoolGpu, ManyOwnersOneAfterAnotherShareOnePool) {
  const std::size_t before = LeasedPool::pools_made();
  for (int owner = 0; owner < 50; ++owner) {
    LeasedPool pool = take();
    ASSERT_TRUE(pool);
    DeviceBuffer buffer = allocate(pool.get(), std::size_t{1} << 20 << (owner % 4));
    ASSERT_TRUE(buffer);
    buffer.reset();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  EXPECT_LE(LeasedPool::pools_made(), before + 1) << "owners one after another made a pool each";
}

std::string pool_kind_name(const ::testing::TestParamInfo<PoolKind>& info) {
  return info.param == PoolKind::kDevice ? "device" : "pinned_host";
}

INSTANTIATE_TEST_SUITE_P(Kinds, LeasedPoolGpu, ::testing::Values(PoolKind::kDevice, PoolKind::kPinnedHost),
                         pool_kind_name);

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::cuda
