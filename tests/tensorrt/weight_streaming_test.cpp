// tensorrt/weight_streaming.h: the budget handed to setWeightStreamingBudgetV2 for a requested one.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tensorrt/weight_streaming.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

constexpr std::int64_t kStreamable = 1000;

TEST(TensorRTWeightStreaming, NoRequestAndNoAutomaticBudgetLeavesTheDefault) {
  const WeightStreamingPlan plan = plan_weight_streaming(kStreamable, std::nullopt);
  EXPECT_EQ(plan.budget, std::nullopt);
  EXPECT_EQ(plan.source, BudgetSource::kNone);
  EXPECT_FALSE(plan.ignored);
  EXPECT_FALSE(plan.streams);
}

TEST(TensorRTWeightStreaming, NoRequestTakesTheAutomaticBudget) {
  WeightStreamingPlan plan = plan_weight_streaming(kStreamable, std::nullopt, std::int64_t{400});
  EXPECT_EQ(plan.budget, std::int64_t{400});
  EXPECT_EQ(plan.source, BudgetSource::kAutomatic);
  EXPECT_TRUE(plan.streams);
  plan = plan_weight_streaming(kStreamable, std::nullopt, std::int64_t{5000});  // everything fits: no streaming
  EXPECT_EQ(plan.budget, kStreamable);
  EXPECT_EQ(plan.source, BudgetSource::kAutomatic);
  EXPECT_FALSE(plan.streams);
  plan = plan_weight_streaming(kStreamable, std::nullopt, std::int64_t{-1});  // TensorRT had none
  EXPECT_EQ(plan.budget, std::nullopt);
  EXPECT_EQ(plan.source, BudgetSource::kNone);
  EXPECT_FALSE(plan.streams);
}

TEST(TensorRTWeightStreaming, RequestTakesPrecedenceOverTheAutomaticBudget) {
  const WeightStreamingPlan plan = plan_weight_streaming(kStreamable, std::uint64_t{100}, std::int64_t{400});
  EXPECT_EQ(plan.budget, std::int64_t{100});
  EXPECT_EQ(plan.source, BudgetSource::kRequested);
  EXPECT_TRUE(plan.streams);
}

TEST(TensorRTWeightStreaming, EngineWithoutStreamableWeightsGetsNoBudgetAtAll) {
  const WeightStreamingPlan plan = plan_weight_streaming(0, std::nullopt, std::int64_t{400});
  EXPECT_EQ(plan.budget, std::nullopt);
  EXPECT_EQ(plan.source, BudgetSource::kNone);
  EXPECT_FALSE(plan.ignored);
}

TEST(TensorRTWeightStreaming, BudgetBelowTheSizeStreams) {
  for (const std::uint64_t requested : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{999}}) {
    const WeightStreamingPlan plan = plan_weight_streaming(kStreamable, requested);
    EXPECT_EQ(plan.budget, static_cast<std::int64_t>(requested));
    EXPECT_EQ(plan.source, BudgetSource::kRequested);
    EXPECT_TRUE(plan.streams) << requested;
    EXPECT_FALSE(plan.ignored);
  }
}

TEST(TensorRTWeightStreaming, BudgetAtOrAboveTheSizeIsClampedAndDoesNotStream) {
  const std::uint64_t above[] = {1000, 1001, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                                 std::numeric_limits<std::uint64_t>::max()};
  for (const std::uint64_t requested : above) {
    const WeightStreamingPlan plan = plan_weight_streaming(kStreamable, requested);
    EXPECT_EQ(plan.budget, kStreamable) << requested;
    EXPECT_FALSE(plan.streams) << requested;
  }
}

TEST(TensorRTWeightStreaming, EngineWithoutStreamableWeightsIgnoresTheRequest) {
  const WeightStreamingPlan plan = plan_weight_streaming(0, std::uint64_t{0});
  EXPECT_EQ(plan.budget, std::nullopt);
  EXPECT_TRUE(plan.ignored);
  EXPECT_FALSE(plan.streams);
}

TEST(TensorRTWeightStreaming, StreamsOnlyBelowTheStreamableSize) {
  EXPECT_TRUE(streams_weights(kStreamable, 0));
  EXPECT_TRUE(streams_weights(kStreamable, 999));
  EXPECT_FALSE(streams_weights(kStreamable, 1000));
  EXPECT_FALSE(streams_weights(kStreamable, 5000));
  EXPECT_FALSE(streams_weights(0, 0));  // not built for weight streaming
  EXPECT_FALSE(streams_weights(kStreamable, -1));
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
