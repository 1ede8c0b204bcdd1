// CPU tests of the split planner: validation, rounding and the closest valid request, against the
// H200's granularity (132 SMs, minimum partition 8, alignment 8) and others.
#include <gtest/gtest.h>

#include "common/gpu.h"
#include "green/contains.h"
#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {


const SmGranularity kH200{132, 8, 8, 0};

std::string error_of(const SmGranularity& g, const SplitRequest& request) {
  auto plan = plan_split(g, request);
  EXPECT_FALSE(plan.ok()) << "planned " << (plan.ok() ? format_counts(plan->planned) : "");
  if (plan.ok()) return "";
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument) << plan.status().to_string();
  return plan.status().message();
}

TEST(GreenPlan, UnitIsMinimumRoundedUpToAlignment) {
  EXPECT_EQ(kH200.unit(), 8u);
  EXPECT_EQ(kH200.group_capacity(), 16u);
  EXPECT_EQ((SmGranularity{108, 4, 2, 0}).unit(), 4u);
  EXPECT_EQ((SmGranularity{64, 6, 4, 0}).unit(), 8u);
  EXPECT_EQ((SmGranularity{10, 0, 0, 0}).unit(), 1u);
  EXPECT_EQ((SmGranularity{132, 8, 8, 14}).group_capacity(), 14u);
}

TEST(GreenPlan, CountsThatFitArePlannedAsAsked) {
  auto plan = plan_split(kH200, SplitRequest::counts({16, 32}));
  TRTET_ASSERT_OK(plan);
  EXPECT_EQ(plan->unit, 8u);
  EXPECT_EQ(plan->requested, (std::vector<unsigned>{16, 32}));
  EXPECT_EQ(plan->planned, (std::vector<unsigned>{16, 32}));
  EXPECT_EQ(plan->groups, 6u);
  EXPECT_FALSE(plan->remainder);
  EXPECT_EQ(plan->remainder_sms, 84u);
}

TEST(GreenPlan, RemainderIsWhatTheCountsLeave) {
  auto plan = plan_split(kH200, SplitRequest::counts({16}, /*remainder=*/true));
  TRTET_ASSERT_OK(plan);
  EXPECT_TRUE(plan->remainder);
  EXPECT_EQ(plan->remainder_sms, 116u);
}

TEST(GreenPlan, WholeCapacityIsAccepted) {
  auto plan = plan_split(kH200, SplitRequest::counts({64, 64}, /*remainder=*/true));
  TRTET_ASSERT_OK(plan);
  EXPECT_EQ(plan->groups, 16u);
  EXPECT_EQ(plan->remainder_sms, 4u);
}

TEST(GreenPlan, ZeroSmsIsRejectedEvenWithRounding) {
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({16, 0})), "partition 1 asks for 0 SMs");
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({0}, false, /*round=*/true)), "0 SMs");
  EXPECT_EQ(check_request(SplitRequest::counts({0})).code(), ErrorCode::kInvalidArgument);
}

TEST(GreenPlan, EmptyOrDoubleRequestIsRejected) {
  EXPECT_CONTAINS(error_of(kH200, SplitRequest{}), "neither was given");
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::equal_groups(0)), "neither was given");
  SplitRequest both = SplitRequest::counts({16});
  both.groups = 2;
  EXPECT_CONTAINS(error_of(kH200, both), "not both");
}

TEST(GreenPlan, MisalignedCountNamesGranularityAndClosestRequest) {
  const std::string message = error_of(kH200, SplitRequest::counts({12, 32}));
  EXPECT_CONTAINS(message, "partition 0 asks for 12 SMs");
  EXPECT_CONTAINS(message, "8-SM granularity");
  EXPECT_CONTAINS(message, "minimum partition 8, alignment 8");
  EXPECT_CONTAINS(message, "closest valid request: 8,32");
  EXPECT_CONTAINS(message, "rounding");
}

TEST(GreenPlan, BelowMinimumIsMisaligned) {
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({4})), "closest valid request: 8");
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({1})), "closest valid request: 8");
}

TEST(GreenPlan, ClosestRoundsToNearestTiesDown) {
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({20, 30})), "closest valid request: 16,32");
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({21})), "closest valid request: 24");
}

TEST(GreenPlan, RoundingTakesTheClosestRequest) {
  auto plan = plan_split(kH200, SplitRequest::counts({12, 30, 17}, false, /*round=*/true));
  TRTET_ASSERT_OK(plan);
  EXPECT_EQ(plan->requested, (std::vector<unsigned>{12, 30, 17}));
  EXPECT_EQ(plan->planned, (std::vector<unsigned>{8, 32, 16}));
  EXPECT_EQ(plan->groups, 7u);
  EXPECT_EQ(plan->remainder_sms, 76u);
}

TEST(GreenPlan, MoreThanTheDeviceHasIsRejected) {
  const std::string message = error_of(kH200, SplitRequest::counts({200}));
  EXPECT_CONTAINS(message, "asks for 200 SMs, more than the device has");
  EXPECT_CONTAINS(message, "132 SMs");
  EXPECT_CONTAINS(message, "closest valid request: 128");
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({136}, false, /*round=*/true)), "more than the device");
}

TEST(GreenPlan, TotalBeyondOneSplitIsRejected) {
  const std::string message = error_of(kH200, SplitRequest::counts({64, 64, 16}));
  EXPECT_CONTAINS(message, "144 SMs in all");
  EXPECT_CONTAINS(message, "at most 16 groups = 128 SMs");
  EXPECT_CONTAINS(message, "closest valid request: 56,56,16");
  // 132 SMs, but only 128 of them in whole groups: rounding never shrinks a total.
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts({128, 4}, false, true)), "136 SMs in all");
}

TEST(GreenPlan, DriverCapacityBoundsTheTotal) {
  const SmGranularity fewer{132, 8, 8, 14};
  EXPECT_CONTAINS(error_of(fewer, SplitRequest::counts({64, 64})), "closest valid request: 56,56");
  TRTET_EXPECT_OK(plan_split(fewer, SplitRequest::counts({56, 56})));
}

TEST(GreenPlan, TooManyPartitionsDropsTrailingOnes) {
  const std::vector<unsigned> seventeen(17, 8);
  EXPECT_EQ(closest_valid_counts(kH200, seventeen), std::vector<unsigned>(16, 8));
  EXPECT_CONTAINS(error_of(kH200, SplitRequest::counts(seventeen)), "136 SMs in all");
}

TEST(GreenPlan, EqualGroupsTakeTheLargestValidSize) {
  auto four = plan_split(kH200, SplitRequest::equal_groups(4, /*remainder=*/true));
  TRTET_ASSERT_OK(four);
  EXPECT_EQ(four->planned, (std::vector<unsigned>{32, 32, 32, 32}));
  EXPECT_EQ(four->requested, four->planned);
  EXPECT_EQ(four->groups, 16u);
  EXPECT_TRUE(four->remainder);
  EXPECT_EQ(four->remainder_sms, 4u);

  auto three = plan_split(kH200, SplitRequest::equal_groups(3));
  TRTET_ASSERT_OK(three);
  EXPECT_EQ(three->planned, (std::vector<unsigned>{40, 40, 40}));
  EXPECT_EQ(three->groups, 15u);
  EXPECT_EQ(three->remainder_sms, 12u);
}

TEST(GreenPlan, TooManyEqualGroupsIsRejected) {
  const std::string message = error_of(kH200, SplitRequest::equal_groups(17));
  EXPECT_CONTAINS(message, "17 equal groups");
  EXPECT_CONTAINS(message, "closest valid request: 16 groups of 8 SMs");
}

TEST(GreenPlan, RemainderNeedsSmsLeftOver) {
  const SmGranularity exact{128, 8, 8, 0};
  EXPECT_CONTAINS(error_of(exact, SplitRequest::equal_groups(16, /*remainder=*/true)), "take all 128 SMs");
  TRTET_EXPECT_OK(plan_split(exact, SplitRequest::equal_groups(16)));
}

TEST(GreenPlan, OtherGranularities) {
  const SmGranularity ampere{108, 4, 2, 0};
  EXPECT_CONTAINS(error_of(ampere, SplitRequest::counts({6})), "closest valid request: 4");
  TRTET_EXPECT_OK(plan_split(ampere, SplitRequest::counts({4, 100})));
  const SmGranularity none{0, 8, 8, 0};
  auto plan = plan_split(none, SplitRequest::counts({8}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kNotSupported);
}

TEST(GreenPlan, FormatCounts) {
  EXPECT_EQ(format_counts({16, 32}), "16,32");
  EXPECT_EQ(format_counts({8}), "8");
  EXPECT_EQ(format_counts({}), "(none)");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::green
