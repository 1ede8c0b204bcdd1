// GPU tests of the staging layer's memory: the staging arenas (Note [staging arena] in
// src/staging/arena.cpp) and the process's staging of each kind (Note [shared staging pools] in
// src/staging/pool.cpp).
#include <gtest/gtest.h>

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "cuda/check.h"
#include "cuda/driver.h"
#include "staging/arena.h"
#include "staging/pool.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

class StagingGpu : public ::testing::Test {
 protected:
  void SetUp() override { TRTET_REQUIRE_GPU(); }
};

// ---- StagingArena: staging mapped in the driver's granularity (Note [staging arena]) -------------

std::string pool_kind_name(const ::testing::TestParamInfo<PoolKind>& info) {
  return info.param == PoolKind::kDevice ? "device" : "pinned_host";
}

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
  const cuda::PoolUsage usage = arena_->usage();
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
  cuda::PoolUsage usage = arena_->usage();
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

TEST_F(StagingGpu, TheProcessStagingIsAnArenaWhereTheDeviceHasVirtualMemoryManagement) {
  auto api = cuda::vmm_driver();
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
    auto buffer = allocate_from(*pool, kMiB, nullptr);
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
}  // namespace torch_tensorrt::executorch_backend::staging
