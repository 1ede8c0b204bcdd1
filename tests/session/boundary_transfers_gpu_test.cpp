// Device-planned arenas and boundary copies (boundary/boundary_transfers.h, Note [boundary
// copies]): each promise checked when it is due, on a stream kept busy so that a copy that does
// not wait, or waits too long, shows. Label gpu: skips without a GPU.
#include "boundary/boundary_transfers.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "common/error_match.h"
#include "common/copy_kernel.h"
#include "common/gpu.h"
#include "common/random.h"
#include "engines/kernels.h"
#include "green/split.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;
using ex::CudaStreamGuard;
using ex::boundary::BoundaryTransfers;

constexpr std::int64_t kBusyNs = 30'000'000;  // 30 ms of a spinning kernel ahead of a copy

std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint32_t seed) {
  std::vector<std::uint8_t> data(bytes);
  fill_random_bytes(data.data(), bytes, seed);
  return data;
}

class BoundaryTransfersGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    auto transfers = BoundaryTransfers::of_device(0);
    TRTET_ASSERT_OK(transfers);
    transfers_ = *transfers;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    }
    for (void* arena : arenas_) transfers_->deallocate(arena);
  }

  unsigned char* arena(std::size_t bytes) {
    auto made = transfers_->allocate(bytes, 256);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    if (!made.ok()) return nullptr;
    arenas_.push_back(*made);
    return static_cast<unsigned char*>(*made);
  }

  /// Keeps `stream` busy for kBusyNs.
  void busy(cudaStream_t stream) { TRTET_ASSERT_OK(launch_spin(kBusyNs, 1, stream)); }

  BoundaryTransfers* transfers_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<void*> arenas_;
};

// Larger than a ring (8 chunks of 1 MiB) and not a whole number of chunks or slices.
constexpr std::size_t kLarge = 20 * (std::size_t{1} << 20) + 3;

TEST_F(BoundaryTransfersGpu, PageableInReturnsBeforeTheStreamAndOutReturnsWithTheData) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  unsigned char* device = arena(kLarge);
  ASSERT_NE(device, nullptr);
  const std::vector<std::uint8_t> sent = pattern(kLarge, 1);
  std::vector<std::uint8_t> source = sent;
  std::vector<std::uint8_t> back(kLarge, 0xEE);
  const auto before = transfers_->stats();
  {
    CudaStreamGuard guard(stream_);
    busy(stream_);
    TRTET_ASSERT_OK(transfers_->copy_to_device(device, source.data(), kLarge));
    // Due now: the source is read (reusable), the transfers are queued behind the busy kernel.
    EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady) << "the copy in waited for the stream";
    std::fill(source.begin(), source.end(), 0x11);
    TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, kLarge));
    // Due now, before any synchronization of ours: the host holds the data.
    EXPECT_TRUE(back == sent) << "the copy out returned before its data landed";
  }
  EXPECT_EQ(transfers_->stats().staged_copies, before.staged_copies + 2);
}

TEST_F(BoundaryTransfersGpu, NoGuardOrdersWithThePerThreadStream) {
  const std::size_t bytes = 3 * (std::size_t{1} << 20) + 100;
  unsigned char* device = arena(bytes);
  ASSERT_NE(device, nullptr);
  const std::vector<std::uint8_t> sent = pattern(bytes, 2);
  std::vector<std::uint8_t> back(bytes, 0);
  // The caller's earlier work on cudaStreamPerThread writes the arena; the copy out must follow it.
  busy(cudaStreamPerThread);
  ASSERT_EQ(cudaMemcpyAsync(device, sent.data(), bytes, cudaMemcpyHostToDevice, cudaStreamPerThread), cudaSuccess);
  TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, bytes));
  EXPECT_TRUE(back == sent);
  // And in: the caller's later work on cudaStreamPerThread sees the copy.
  const std::vector<std::uint8_t> again = pattern(bytes, 3);
  busy(cudaStreamPerThread);
  TRTET_ASSERT_OK(transfers_->copy_to_device(device, again.data(), bytes));
  std::vector<std::uint8_t> seen(bytes, 0);
  ASSERT_EQ(cudaMemcpyAsync(seen.data(), device, bytes, cudaMemcpyDeviceToHost, cudaStreamPerThread), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  EXPECT_TRUE(seen == again);
}

TEST_F(BoundaryTransfersGpu, PinnedSourceIsFreeOnReturn) {
  const std::size_t bytes = std::size_t{2} << 20;
  unsigned char* device = arena(bytes);
  ASSERT_NE(device, nullptr);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), cudaSuccess);
  const std::vector<std::uint8_t> sent = pattern(bytes, 4);
  std::memcpy(pinned, sent.data(), bytes);
  const auto before = transfers_->stats();
  {
    CudaStreamGuard guard(stream_);
    busy(stream_);
    TRTET_ASSERT_OK(transfers_->copy_to_device(device, pinned, bytes));
    std::memset(pinned, 0x5A, bytes);  // the application reuses its input once the call returned
    std::vector<std::uint8_t> back(bytes, 0);
    TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, bytes));
    EXPECT_TRUE(back == sent) << "the pinned source was read after the copy returned";
  }
  EXPECT_EQ(transfers_->stats().direct_copies, before.direct_copies + 1);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(BoundaryTransfersGpu, CaptureRecordsPinnedCopiesAndRefusesPageableOnes) {
  const std::size_t bytes = std::size_t{1} << 20;
  unsigned char* device = arena(bytes);
  ASSERT_NE(device, nullptr);
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned_in, bytes, cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned_out, bytes, cudaHostAllocDefault), cudaSuccess);
  std::vector<std::uint8_t> pageable(bytes, 1);
  cudaGraph_t graph = nullptr;
  {
    CudaStreamGuard guard(stream_);
    ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
    TRTET_EXPECT_OK(transfers_->copy_to_device(device, pinned_in, bytes));
    const auto refused = transfers_->copy_to_device(device, pageable.data(), bytes);
    TRTET_EXPECT_ERROR(refused, ex::ErrorCode::kInvalidArgument, "captured");
    const auto refused_out = transfers_->copy_to_host(pageable.data(), device, bytes);
    EXPECT_EQ(refused_out.code(), ex::ErrorCode::kInvalidArgument);
    TRTET_EXPECT_OK(transfers_->copy_to_host(pinned_out, device, bytes));
    // The capture is still valid after the refusals.
    ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  }
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (std::uint32_t round = 0; round < 3; ++round) {
    const std::vector<std::uint8_t> sent = pattern(bytes, 10 + round);
    std::memcpy(pinned_in, sent.data(), bytes);
    ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(std::memcmp(pinned_out, sent.data(), bytes), 0) << "replay " << round;
  }
  // Eager calls after the capture still work.
  const std::vector<std::uint8_t> sent = pattern(bytes, 20);
  std::vector<std::uint8_t> back(bytes, 0);
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(transfers_->copy_to_device(device, sent.data(), bytes));
    TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, bytes));
  }
  EXPECT_TRUE(back == sent);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned_in), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned_out), cudaSuccess);
}

TEST_F(BoundaryTransfersGpu, CopiesPastTheArenaOrIntoHostMemoryAreRefusedAndTheNextCallWorks) {
  const std::size_t bytes = 4096;
  unsigned char* device = arena(bytes);
  ASSERT_NE(device, nullptr);
  std::vector<std::uint8_t> host(2 * bytes, 7);
  const auto past = transfers_->copy_to_device(device + bytes - 8, host.data(), 16);
  TRTET_EXPECT_ERROR(past, ex::ErrorCode::kInvalidArgument, "past the end");
  const auto past_out = transfers_->copy_to_host(host.data(), device + 1, bytes);
  EXPECT_EQ(past_out.code(), ex::ErrorCode::kInvalidArgument);
  std::vector<std::uint8_t> other(bytes);
  const auto not_device = transfers_->copy_to_device(other.data(), host.data(), bytes);
  EXPECT_EQ(not_device.code(), ex::ErrorCode::kInvalidArgument) << not_device.message();
  const std::vector<std::uint8_t> sent = pattern(bytes, 5);
  std::vector<std::uint8_t> back(bytes);
  TRTET_ASSERT_OK(transfers_->copy_to_device(device, sent.data(), bytes));
  TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, bytes));
  EXPECT_TRUE(back == sent);
}

TEST_F(BoundaryTransfersGpu, ArenasOfAMissingDeviceAreRefused) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const auto missing = BoundaryTransfers::of_device(count);
  EXPECT_EQ(missing.status().code(), ex::ErrorCode::kInvalidArgument) << missing.status().to_string();
  const auto negative = BoundaryTransfers::of_device(-2);
  EXPECT_FALSE(negative.ok());
}

TEST_F(BoundaryTransfersGpu, AStreamOfAnotherDeviceIsRefused) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << count;
  unsigned char* device = arena(4096);
  ASSERT_NE(device, nullptr);
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<std::uint8_t> host(4096, 1);
  {
    CudaStreamGuard guard(other);
    const auto refused = transfers_->copy_to_device(device, host.data(), host.size());
    TRTET_EXPECT_ERROR(refused, ex::ErrorCode::kInvalidArgument, "device 1");
  }
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
  // Device 1's own transfers put arenas on device 1.
  auto second = BoundaryTransfers::of_device(1);
  TRTET_ASSERT_OK(second);
  auto made = (*second)->allocate(4096, 256);
  TRTET_ASSERT_OK(made);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, *made), cudaSuccess);
  EXPECT_EQ(attributes.device, 1);
  (*second)->deallocate(*made);
}

TEST_F(BoundaryTransfersGpu, ThreadsOnTheirOwnStreamsShareTheStagingAndStayRight) {
  constexpr int kThreads = 4;  // more threads than rings: some wait for a ring
  constexpr int kRounds = 12;
  const std::size_t bytes = 9 * (std::size_t{1} << 20) + 77;
  std::vector<unsigned char*> devices;
  for (int t = 0; t < kThreads; ++t) {
    devices.push_back(arena(bytes));
    ASSERT_NE(devices.back(), nullptr);
  }
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaSetDevice(0);
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      std::vector<std::uint8_t> back(bytes);
      for (int round = 0; round < kRounds; ++round) {
        const std::vector<std::uint8_t> sent = pattern(bytes, static_cast<std::uint32_t>(100 * t + round));
        CudaStreamGuard guard(stream);
        (void)launch_spin(1'000'000, 1, stream);
        auto in = transfers_->copy_to_device(devices[static_cast<std::size_t>(t)], sent.data(), bytes);
        auto out = in.ok() ? transfers_->copy_to_host(back.data(), devices[static_cast<std::size_t>(t)], bytes) : in;
        if (!out.ok()) {
          errors[static_cast<std::size_t>(t)] = out.to_string();
          break;
        }
        if (back != sent) ++wrong[static_cast<std::size_t>(t)];
      }
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[static_cast<std::size_t>(t)], "") << "thread " << t;
    EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0) << "thread " << t;
  }
}

// Which way a staged copy's small chunks move, by the stream (Note [small copies]): the copy kernel
// on a partition's stream, the copy engines on an ordinary stream and without a guard. The bytes land
// either way. The GPU machines' builds are for sm_90, where the kernel must be there.
TEST_F(BoundaryTransfersGpu, SmallChunksTakeTheCopyKernelOnlyOnAPartitionsStream) {
  constexpr std::size_t kBytes = 4096 + 3;
  unsigned char* device = arena(kBytes);
  ASSERT_NE(device, nullptr);
  auto split = ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true));
  TRTET_ASSERT_OK(split);
  auto partition_stream = (*split)[0].context.make_stream();  // owned by the partition
  TRTET_ASSERT_OK(partition_stream);
  const bool kernel_here = kernel_copies_here();  // an sm_90 device without it fails the test
  struct Way {
    const char* name;
    cudaStream_t stream;
    bool guarded;
    bool kernel;
  };
  for (const Way& way : {Way{"an ordinary stream", stream_, true, false},
                         Way{"a partition's stream", *partition_stream, true, kernel_here},
                         Way{"no guard", nullptr, false, false}}) {
    SCOPED_TRACE(way.name);
    const std::vector<std::uint8_t> sent = pattern(kBytes, 7);
    std::vector<std::uint8_t> back(kBytes, 0xEE);
    const auto before = transfers_->stats();
    {
      std::optional<CudaStreamGuard> guard;
      if (way.guarded) guard.emplace(way.stream);
      TRTET_ASSERT_OK(transfers_->copy_to_device(device, sent.data(), kBytes));
      TRTET_ASSERT_OK(transfers_->copy_to_host(back.data(), device, kBytes));
    }
    EXPECT_TRUE(back == sent) << "the copy out returned before its data landed, or the data is wrong";
    const auto after = transfers_->stats();
    EXPECT_EQ(after.kernel_transfers - before.kernel_transfers, way.kernel ? 2u : 0u);
    EXPECT_EQ(after.engine_transfers - before.engine_transfers, way.kernel ? 0u : 2u);
  }
}

}  // namespace
}  // namespace trtet_test
