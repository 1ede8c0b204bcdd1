// GPU tests of the staging layer's memory: the staging arenas (Note [staging arena] in
// src/staging/arena.cpp), the process's staging of each kind (Note [shared staging pools] in
// src/staging/pool.cpp), and small chunks moved by the copy kernel (Note [small copies] in
// src/staging/small_copy.cu).
#include <gtest/gtest.h>

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "common/large_copies.h"
#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "staging/arena.h"
#include "staging/chunked_copy.h"
#include "staging/layout.h"
#include "staging/pool.h"
#include "staging/small_copy.h"

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

// ---- Small chunks by the copy kernel (Note [small copies] in src/staging/small_copy.cu) ----------

/// Chunks of the process's pinned host staging (the memory a session stages through) that the
/// test may say the device does not map.
class TestChunks final : public PinnedChunks {
 public:
  TestChunks(unsigned char* data, cuda::Event* events, bool mapped) noexcept
      : data_(data), events_(events), mapped_(mapped) {}
  Result<PinnedChunk> take(std::size_t offset, std::size_t) override {
    PinnedChunk chunk{data_ + offset, events_};
    if (events_ != nullptr) ++events_;
    return chunk;
  }
  bool small_by_kernel() const noexcept override { return mapped_; }

 private:
  unsigned char* data_;
  cuda::Event* events_;
  bool mapped_;
};

class SmallCopiesGpu : public StagingGpu {
 protected:
  /// True on an sm_90 device, the architecture the GPU machines' builds are for.
  static bool sm90() {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    return major == 9 && minor == 0;
  }

  static constexpr std::size_t kMost = 256 << 10;  // the largest copy below, and its guards
  static constexpr std::size_t kGuard = 64;

  void SetUp() override {
    StagingGpu::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    auto pool = staging_pool(PoolKind::kPinnedHost, 0);
    TRTET_ASSERT_OK(pool);
    for (auto* buffer : {&sent_staging_, &received_staging_}) {
      auto made = allocate_from(*pool, kMost + 2 * kGuard, stream_);
      TRTET_ASSERT_OK(made);
      *buffer = std::move(made).value();
    }
    ASSERT_EQ(cudaMalloc(&device_, kMost + 2 * kGuard), cudaSuccess);
    for (auto& event : events_) {
      auto made = cuda::Event::create();
      TRTET_ASSERT_OK(made);
      event = std::move(made).value();
    }
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    sent_staging_.reset();
    received_staging_.reset();
    if (device_ != nullptr) cudaFree(device_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  /// One round trip's memory: a pattern in pageable memory, `out` and the device memory filled with
  /// guard bytes (on the device before this returns).
  struct Trip {
    std::size_t bytes = 0, offset = 0;
    std::vector<unsigned char> in, out;
  };
  Trip prepare(std::size_t bytes, std::size_t offset) {
    Trip trip{bytes, offset, std::vector<unsigned char>(kMost + 2 * kGuard), std::vector<unsigned char>(kMost + 2 * kGuard, 0xCD)};
    for (std::size_t i = 0; i < trip.in.size(); ++i) trip.in[i] = static_cast<unsigned char>(i * 131 + bytes);
    EXPECT_EQ(cudaMemsetAsync(device_, 0xAB, kMost + 2 * kGuard, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return trip;
  }
  /// Sends the trip's bytes from pageable memory at its offset to the device at that offset and
  /// receives them back; returns once they are in `out`.
  void move(ChunkedCopy& copies, Trip& trip, bool mapped) {
    auto* device = static_cast<unsigned char*>(device_) + kGuard + trip.offset;
    TestChunks sent(static_cast<unsigned char*>(sent_staging_.data()) + trip.offset, nullptr, mapped);
    TestChunks received(static_cast<unsigned char*>(received_staging_.data()) + trip.offset, events_, mapped);
    TRTET_ASSERT_OK(copies.send(device, trip.in.data() + kGuard + trip.offset, trip.bytes, stream_, sent));
    TRTET_ASSERT_OK(copies.queue_receive(trip.out.data() + kGuard + trip.offset, device, trip.bytes, stream_, received));
    TRTET_ASSERT_OK(copies.finish_receives());
  }
  /// Every byte of the copy, in `out` and on the device, and the guards on each side of both.
  void verify(const Trip& trip) {
    SCOPED_TRACE(std::to_string(trip.bytes) + " bytes at offset " + std::to_string(trip.offset));
    auto inside = [&](std::size_t i) { return i >= kGuard + trip.offset && i < kGuard + trip.offset + trip.bytes; };
    for (std::size_t i = 0; i < trip.out.size(); ++i) {
      ASSERT_EQ(trip.out[i], inside(i) ? trip.in[i] : 0xCD) << "byte " << i << (inside(i) ? " of the copy" : " outside it");
    }
    std::vector<unsigned char> on_device(kMost + 2 * kGuard);
    ASSERT_EQ(cudaMemcpy(on_device.data(), device_, on_device.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < on_device.size(); ++i) {
      ASSERT_EQ(on_device[i], inside(i) ? trip.in[i] : 0xAB) << "device byte " << i << (inside(i) ? " of the copy" : " outside it");
    }
  }
  void round_trip(ChunkedCopy& copies, std::size_t bytes, std::size_t offset, bool mapped) {
    Trip trip = prepare(bytes, offset);
    move(copies, trip, mapped);
    if (HasFatalFailure()) return;
    verify(trip);
  }

  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer sent_staging_, received_staging_;
  void* device_ = nullptr;
  cuda::Event events_[4];
};

TEST_F(SmallCopiesGpu, ChunksOfAtMost64KiBMoveByTheCopyKernelExactlyAndLargerOnesByTheCopyEngines) {
  if (!kernel_copies_on_current_device()) {
    // The GPU machines' builds are for sm_90: there the kernel must be there.
    ASSERT_FALSE(sm90()) << "an sm_90 device without the copy kernel (TRTET_SMALL_COPIES=engines left set?)";
    GTEST_SKIP() << "this build has no copy kernel for this device; copies take the copy engines";
  }
  ChunkedCopy copies;
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{3}, std::size_t{15}, std::size_t{16}, std::size_t{17},
                                  std::size_t{4095}, std::size_t{4096}, std::size_t{4097}, kKernelCopyMaxBytes - 1,
                                  kKernelCopyMaxBytes, kKernelCopyMaxBytes + 1, kMost}) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{8}}) {
      const std::size_t kernels = copies.kernel_transfers(), engines = copies.engine_transfers();
      round_trip(copies, bytes, offset, true);
      if (HasFatalFailure()) return;
      const bool small = bytes <= kKernelCopyMaxBytes;
      EXPECT_EQ(copies.kernel_transfers() - kernels, small ? 2u : 0u) << bytes << " bytes at offset " << offset;
      EXPECT_EQ(copies.engine_transfers() - engines, small ? 0u : 2u) << bytes << " bytes at offset " << offset;
    }
  }
}

TEST_F(SmallCopiesGpu, ChunksTheDeviceDoesNotMapTakeTheCopyEnginesWhateverTheirSize) {
  ChunkedCopy copies;
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{4096}, kKernelCopyMaxBytes}) {
    round_trip(copies, bytes, 1, false);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(copies.kernel_transfers(), 0u);
  EXPECT_EQ(copies.engine_transfers(), 6u);
}

TEST_F(SmallCopiesGpu, ASmallCopyDoesNotWaitBehindAnotherStreamsLargeCopies) {
  if (!kernel_copies_on_current_device()) {
    ASSERT_FALSE(sm90()) << "an sm_90 device without the copy kernel (TRTET_SMALL_COPIES=engines left set?)";
    GTEST_SKIP() << "this build has no copy kernel for this device";
  }
  ChunkedCopy copies;
  round_trip(copies, kKernelCopyMaxBytes, 0, true);  // the kernel loaded, the staging touched
  if (HasFatalFailure()) return;
  // Another stream's large copies, each way, keep the copy engines busy for milliseconds.
  trtet_test::LargeCopies large;
  ASSERT_TRUE(large.ok());
  Trip trip = prepare(kKernelCopyMaxBytes, 0);
  ASSERT_TRUE(large.start());
  // The small copies each way, and their landing, while the large ones are in flight: asked the
  // moment the small ones have landed, before anything else touches the copy engines.
  move(copies, trip, true);
  EXPECT_TRUE(large.running()) << "the small copies landed only once the other stream's large copies were done";
  EXPECT_EQ(large.finish(), cudaSuccess);
  verify(trip);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
