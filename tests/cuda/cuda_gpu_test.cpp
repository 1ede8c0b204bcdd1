// GPU tests of the cuda layer: stream facts on real, per-thread and green-context streams;
// owners that allocate; the device guard; the staging arenas.
#include <gtest/gtest.h>

#include <cuda.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_buffer.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "cuda/pinned_buffer.h"
#include "cuda/staging_arena.h"
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

// ---- StagingArena: staging mapped in the driver's granularity (Note [staging arena]) -------------

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// Keeps a stream busy for `ms` on the host's clock (a host function that sleeps): work recorded
/// after it completes only then.
void hold_stream(cudaStream_t stream, int ms) {
  static int held_ms;
  held_ms = ms;
  ASSERT_EQ(cudaLaunchHostFunc(
                stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(held_ms)); }, nullptr),
            cudaSuccess);
}

class StagingArenaGpu : public ::testing::TestWithParam<PoolKind> {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&a_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b_, cudaStreamNonBlocking), cudaSuccess);
    auto made = StagingArena::create(GetParam(), 0);
    if (made.status().code() == ErrorCode::kNotSupported) GTEST_SKIP() << made.status().to_string();
    TRTET_ASSERT_OK(made);
    arena_ = std::move(made).value();
  }
  void TearDown() override {
    if (a_ != nullptr) cudaStreamSynchronize(a_);
    if (b_ != nullptr) cudaStreamSynchronize(b_);
    arena_.reset();  // nothing uses its memory any more
    if (a_ != nullptr) cudaStreamDestroy(a_);
    if (b_ != nullptr) cudaStreamDestroy(b_);
  }
  void* allocate(std::size_t bytes, cudaStream_t stream) {
    auto data = arena_->allocate(bytes, stream);
    EXPECT_TRUE(data.ok()) << data.status().to_string();
    return data.ok() ? *data : nullptr;
  }
  bool host() const { return GetParam() == PoolKind::kPinnedHost; }

  cudaStream_t a_ = nullptr;
  cudaStream_t b_ = nullptr;
  std::unique_ptr<StagingArena> arena_;
};

TEST_P(StagingArenaGpu, ThreeMiBTakeTwoChunksOfTheGranularity) {
  const ArenaFacts facts = arena_->facts();
  RecordProperty("granularity", std::to_string(facts.granularity));
  RecordProperty("chunk_bytes", std::to_string(facts.chunk_bytes));
  std::printf("%s arena: granularity %zu, chunks of %zu, %s (id %d), range %zu MiB\n", host() ? "pinned host" : "device",
              facts.granularity, facts.chunk_bytes, location_name(facts.location_type), facts.location_id,
              facts.range_bytes >> 20);
  EXPECT_EQ(facts.chunk_bytes % facts.granularity, 0u);
  EXPECT_GE(facts.chunk_bytes, 2 * kMiB);
  for (int i = 0; i < 3; ++i) ASSERT_NE(allocate(kMiB, a_), nullptr);
  const PoolUsage usage = arena_->usage();
  EXPECT_EQ(usage.used, 3 * kMiB);
  EXPECT_EQ(usage.reserved, (3 * kMiB + facts.chunk_bytes - 1) / facts.chunk_bytes * facts.chunk_bytes)
      << "an arena maps whole chunks, as few as the allocations need";
  if (facts.chunk_bytes == 2 * kMiB) {
    EXPECT_EQ(usage.reserved, 4 * kMiB);
  }
  if (host()) std::printf("host access: %s\n", arena_->facts().host_access.c_str());
}

TEST_P(StagingArenaGpu, ItsMemoryIsReadAndWrittenByTheDeviceAndWhereItLives) {
  constexpr std::size_t kBytes = 3 * kMiB;  // spans two chunks
  (void)allocate(kMiB, a_);                 // so the next one starts inside the first chunk
  auto* first = static_cast<unsigned char*>(allocate(kBytes, a_));
  auto* second = static_cast<unsigned char*>(allocate(kBytes, a_));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::vector<unsigned char> expected(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) expected[i] = static_cast<unsigned char>(i * 7 + 3);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
  if (host()) {
    std::memcpy(first, expected.data(), kBytes);  // the host writes it directly
    ASSERT_EQ(cudaMemcpyAsync(device, first, kBytes, cudaMemcpyDefault, a_), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(second, device, kBytes, cudaMemcpyDefault, a_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
    EXPECT_EQ(std::memcmp(second, expected.data(), kBytes), 0) << "the copies through the device lost data";
  } else {
    ASSERT_EQ(cudaMemcpyAsync(first, expected.data(), kBytes, cudaMemcpyDefault, a_), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(second, first, kBytes, cudaMemcpyDefault, a_), cudaSuccess);
    std::vector<unsigned char> back(kBytes);
    ASSERT_EQ(cudaMemcpyAsync(back.data(), second, kBytes, cudaMemcpyDefault, a_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
    EXPECT_EQ(back, expected);
  }
  cudaFree(device);
}

TEST_P(StagingArenaGpu, AFreeIsReusedOnItsOwnStreamOrOnceCompleteAndNothingWaits) {
  const std::size_t chunk = arena_->facts().chunk_bytes;
  hold_stream(a_, 300);
  void* p = allocate(chunk, a_);
  arena_->free(p, a_);  // pending until a_'s 300 ms are over
  const auto start = std::chrono::steady_clock::now();
  void* q = allocate(chunk, b_);
  void* r = allocate(chunk, a_);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(cudaStreamQuery(a_), cudaErrorNotReady) << "the allocations waited for the pending free";
  EXPECT_LT(ms, 150.0);
  EXPECT_NE(q, p) << "another stream took memory whose free had not completed";
  if (host()) {
    EXPECT_NE(r, p) << "host memory was reused before its free completed (the host would write it too early)";
  } else {
    EXPECT_EQ(r, p) << "the freeing stream is ordered after its own free: it reuses the memory";
  }
  const std::uint64_t reserved = arena_->usage().reserved;
  arena_->free(q, b_);
  arena_->free(r, a_);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b_), cudaSuccess);
  const int freed = host() ? 3 : 2;  // p, q and r (device memory: r is p)
  for (int i = 0; i < freed; ++i) ASSERT_NE(allocate(chunk, b_), nullptr);
  EXPECT_EQ(arena_->usage().reserved, reserved) << "completed frees were not reused";
}

TEST_P(StagingArenaGpu, TrimUnmapsWhatNothingUsesAndGrowthMapsItAgain) {
  void* large = allocate(8 * kMiB, a_);
  void* small = allocate(kMiB, a_);
  ASSERT_NE(large, nullptr);
  ASSERT_NE(small, nullptr);
  arena_->free(large, a_);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  TRTET_ASSERT_OK(arena_->trim());
  const std::size_t chunk = arena_->facts().chunk_bytes;
  PoolUsage usage = arena_->usage();
  EXPECT_EQ(usage.used, kMiB);
  EXPECT_EQ(usage.reserved, (9 * kMiB + chunk - 1) / chunk * chunk - (8 * kMiB / chunk) * chunk)
      << "trim left unused chunks mapped, or unmapped a used one";
  arena_->free(small, a_);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  TRTET_ASSERT_OK(arena_->trim());
  usage = arena_->usage();
  EXPECT_EQ(usage.reserved, 0u);
  EXPECT_EQ(usage.used, 0u);
  EXPECT_GE(usage.reserved_high, 9 * kMiB);
  void* again = allocate(2 * kMiB, a_);
  ASSERT_NE(again, nullptr);
  ASSERT_EQ(cudaMemsetAsync(again, 0x11, 2 * kMiB, a_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(a_), cudaSuccess);
  arena_->free(again, a_);
}

INSTANTIATE_TEST_SUITE_P(Kinds, StagingArenaGpu, ::testing::Values(PoolKind::kDevice, PoolKind::kPinnedHost),
                         pool_kind_name);

TEST_F(CudaGpu, TheProcessStagingIsAnArenaWhereTheDeviceHasVirtualMemoryManagement) {
  auto api = vmm_driver();
  TRTET_ASSERT_OK(api);
  CUdevice device = 0;
  ASSERT_EQ((*api)->cuDeviceGet(&device, 0), CUDA_SUCCESS);
  int vmm = 0;
  ASSERT_EQ((*api)->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device),
            CUDA_SUCCESS);
  for (const PoolKind kind : {PoolKind::kDevice, PoolKind::kPinnedHost}) {
    auto pool = staging_pool(kind, 0);
    TRTET_ASSERT_OK(pool);
    std::printf("%s\n", (*pool)->describe().c_str());
    RecordProperty(kind == PoolKind::kDevice ? "device_staging" : "host_staging", (*pool)->describe());
    if (kind == PoolKind::kDevice && vmm != 0) {
      EXPECT_TRUE((*pool)->uses_arena()) << (*pool)->describe();
    }
    auto buffer = DeviceBuffer::allocate_from(*pool, kMiB, nullptr);
    TRTET_ASSERT_OK(buffer);
    auto usage = staging_pool_usage(kind, 0);
    TRTET_ASSERT_OK(usage);
    EXPECT_GE(usage->used, kMiB);
    if ((*pool)->uses_arena()) {
      EXPECT_LE(usage->reserved, 4 * kMiB) << "1 MiB of staging reserved more than 4 MiB";
    }
    buffer->reset();
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    TRTET_ASSERT_OK(trim_staging_pool(kind, 0));
  }
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::cuda
