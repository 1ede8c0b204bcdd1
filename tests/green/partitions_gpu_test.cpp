// The public partitions API (GreenContext.h) on a GPU: the limits come from the device, a split's
// partitions are confined to their grants and share no SM (measured by the SM probe), rejected
// requests name what the hardware allows, more streams stay in their partition, and destruction
// waits for the partition's own work. Label gpu: skips with CUDA's reason without a device.
#include <torch_tensorrt/executorch/GreenContext.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/error_match.h"
#include "common/gpu.h"
#include "green/probe.h"

namespace et = torch_tensorrt::executorch_backend;
namespace green = et::green;

namespace {

class PartitionsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&device_sms_, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    auto limits = et::green_context_limits(0);
    ASSERT_TRUE(limits.ok()) << limits.error().message();
    limits_ = *limits;
  }

  std::vector<int> probe(cudaStream_t stream) {
    auto sms = green::probe_sms(stream);
    EXPECT_TRUE(sms.ok()) << sms.status().to_string();
    return sms.ok() ? *sms : std::vector<int>{};
  }

  int device_sms_ = 0;
  et::GreenContextLimits limits_;
};

TEST_F(PartitionsGpu, LimitsComeFromTheDevice) {
  std::printf("device 0: %u SMs, minimum partition %u, alignment %u, granularity %u, at most %u SMs per split\n",
              limits_.sm_count, limits_.min_partition, limits_.alignment, limits_.granularity,
              limits_.max_partitioned_sms);
  EXPECT_EQ(limits_.device, 0);
  EXPECT_EQ(limits_.sm_count, static_cast<unsigned>(device_sms_));
  EXPECT_GT(limits_.min_partition, 0u);
  EXPECT_GT(limits_.alignment, 0u);
  EXPECT_GE(limits_.granularity, limits_.min_partition);
  EXPECT_EQ(limits_.granularity % limits_.alignment, 0u);
  EXPECT_GT(limits_.max_partitioned_sms, 0u);
  EXPECT_LE(limits_.max_partitioned_sms, limits_.sm_count);
  EXPECT_EQ(limits_.max_partitioned_sms % limits_.granularity, 0u);
}

// One split: a partition of 2 granules and the remainder, each confined, disjoint, with a stream.
TEST_F(PartitionsGpu, PartitionAndRemainderAreConfinedAndDisjoint) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const unsigned asked = 2 * limits_.granularity;
  auto split = et::split_device(0, {asked}, et::Remainder::kKeep);
  ASSERT_TRUE(split.ok()) << split.error().message();
  ASSERT_EQ(split->size(), 2u);
  et::GreenContext& mine = (*split)[0];
  et::GreenContext& rest = (*split)[1];
  EXPECT_EQ(mine.device(), 0);
  EXPECT_EQ(mine.sm_count(), asked);
  EXPECT_EQ(mine.requested_sms(), asked);
  EXPECT_FALSE(mine.is_remainder());
  EXPECT_TRUE(rest.is_remainder());
  EXPECT_EQ(rest.requested_sms(), 0u);
  EXPECT_EQ(rest.sm_count(), limits_.sm_count - asked);
  ASSERT_EQ(mine.streams().size(), 1u);
  ASSERT_EQ(rest.streams().size(), 1u);
  EXPECT_EQ(mine.stream(), mine.streams().front());
  EXPECT_NE(mine.handle(), nullptr);
  EXPECT_NE(mine.handle(), rest.handle());

  const std::vector<int> mine_sms = probe(mine.stream());
  const std::vector<int> rest_sms = probe(rest.stream());
  std::printf("partition: granted %u, ran on %zu SMs; remainder: granted %u, ran on %zu SMs\n", mine.sm_count(),
              mine_sms.size(), rest.sm_count(), rest_sms.size());
  EXPECT_EQ(mine_sms.size(), static_cast<std::size_t>(mine.sm_count())) << "a saturating probe reaches every granted SM";
  EXPECT_LE(rest_sms.size(), static_cast<std::size_t>(rest.sm_count()));
  EXPECT_GT(rest_sms.size(), 0u);
  EXPECT_EQ(green::shared_sms(mine_sms, rest_sms), 0u) << "the partitions share SMs";
}

TEST_F(PartitionsGpu, SeveralPartitionsOfOneSplitShareNoSm) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const unsigned g = limits_.granularity;
  auto split = et::split_device(0, {g, 2 * g, 4 * g});
  ASSERT_TRUE(split.ok()) << split.error().message();
  ASSERT_EQ(split->size(), 3u);
  std::vector<std::vector<int>> seen;
  for (et::GreenContext& p : *split) {
    seen.push_back(probe(p.stream()));
    EXPECT_EQ(seen.back().size(), static_cast<std::size_t>(p.sm_count()));
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    for (std::size_t j = i + 1; j < seen.size(); ++j) {
      EXPECT_EQ(green::shared_sms(seen[i], seen[j]), 0u) << "partitions " << i << " and " << j;
    }
  }
}

TEST_F(PartitionsGpu, AMisalignedCountNamesTheLimitsAndTheClosestValidRequest) {
  const unsigned g = limits_.granularity;
  if (g < 2) GTEST_SKIP() << "this device splits by single SMs: no count is misaligned";
  auto split = et::split_device(0, {4 * g - 2});
  ASSERT_FALSE(split.ok());
  const et::GreenContextError& e = split.error();
  EXPECT_EQ(e.code(), et::GreenContextErrc::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(e, "not a multiple of the " + std::to_string(g) + "-SM granularity");
  TRTET_EXPECT_ERROR_SAYS(e, "minimum partition " + std::to_string(limits_.min_partition));
  TRTET_EXPECT_ERROR_SAYS(e, "alignment " + std::to_string(limits_.alignment));
  TRTET_EXPECT_ERROR_SAYS(e, "closest valid request: " + std::to_string(4 * g));
  TRTET_EXPECT_ERROR_OMITS(e, "rounding") << "this API offers no rounding";
  EXPECT_EQ(e.closest_valid(), std::vector<unsigned>{4 * g});
  EXPECT_EQ(e.limits().device, 0);
  EXPECT_EQ(e.limits().granularity, g);
}

TEST_F(PartitionsGpu, MoreSmsThanOneSplitGivesIsRejectedWithTheMost) {
  const unsigned most = limits_.max_partitioned_sms;
  auto split = et::split_device(0, {most, limits_.granularity});
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code(), et::GreenContextErrc::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(split.error(), "more than one split can give");
  unsigned closest_total = 0;
  for (unsigned c : split.error().closest_valid()) closest_total += c;
  EXPECT_LE(closest_total, most);
  EXPECT_FALSE(split.error().closest_valid().empty());
}

TEST_F(PartitionsGpu, ARemainderWhereNoSmIsLeftIsRejected) {
  if (limits_.max_partitioned_sms < limits_.sm_count) GTEST_SKIP() << "one split always leaves SMs on this device";
  auto split = et::split_device(0, {limits_.max_partitioned_sms}, et::Remainder::kKeep);
  ASSERT_FALSE(split.ok());
  TRTET_EXPECT_ERROR_SAYS(split.error(), "remainder");
}

TEST_F(PartitionsGpu, MoreStreamsStayInThePartition) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto split = et::split_device(0, {limits_.granularity});
  ASSERT_TRUE(split.ok()) << split.error().message();
  et::GreenContext& p = split->front();
  auto high = p.make_stream(-1);
  ASSERT_TRUE(high.ok()) << high.error().message();
  ASSERT_EQ(p.streams().size(), 2u);
  EXPECT_EQ(p.streams()[1], *high);
  EXPECT_NE(*high, p.stream());
  const std::vector<int> sms = probe(*high);
  EXPECT_EQ(sms.size(), static_cast<std::size_t>(p.sm_count()));
  EXPECT_EQ(green::shared_sms(sms, probe(p.stream())), sms.size()) << "both streams run on the same SMs";
}

// A host callback that sleeps stands for queued work: reset() must wait for it (the partition's
// own stream), then destroy the stream and the context.
TEST_F(PartitionsGpu, DestructionWaitsForThePartitionsOwnWork) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto split = et::split_device(0, {limits_.granularity});
  ASSERT_TRUE(split.ok()) << split.error().message();
  et::GreenContext p = std::move(split->front());
  ASSERT_TRUE(p);
  EXPECT_FALSE(split->front()) << "moved-from partitions are empty";
  static std::atomic<bool> done{false};
  done = false;
  ASSERT_EQ(cudaLaunchHostFunc(
                p.stream(),
                [](void*) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(100));
                  done = true;
                },
                nullptr),
            cudaSuccess);
  p.reset();
  EXPECT_TRUE(done.load()) << "reset() returned before the partition's queued work finished";
  EXPECT_FALSE(p);
  EXPECT_TRUE(p.streams().empty());
}

// Many splits in a row release everything: the 200th split still gets what the first did.
TEST_F(PartitionsGpu, RepeatedSplitsReleaseTheirPartitions) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  for (int i = 0; i < 200; ++i) {
    auto split = et::split_device(0, {limits_.granularity}, et::Remainder::kKeep);
    ASSERT_TRUE(split.ok()) << "split " << i << ": " << split.error().message();
    ASSERT_EQ(split->size(), 2u);
    ASSERT_EQ(split->front().sm_count(), limits_.granularity);
  }
}

}  // namespace
