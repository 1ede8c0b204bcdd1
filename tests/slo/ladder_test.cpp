// CPU tests of the ladder: its rules, each refused with a message naming the plan and model, and its
// predictions (linear between measured points, the first point's p99 below it, infeasible beyond the last).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include <torch_tensorrt/executorch/SloController.h>

namespace torch_tensorrt::executorch_backend::slo {
namespace {

std::vector<CurvePoint> curve() { return {{0, 100}, {100, 200}, {200, 400}}; }

std::vector<LadderPlan> two_plans() {
  return {
      {"small", {{"a", 16, curve()}, {"b", 48, curve()}}},
      {"big", {{"b", 16, curve()}, {"a", 48, curve()}}},  // another order: stored in the first plan's order
  };
}

TEST(SloLadder, AValidLadderKeepsItsPlansInTheFirstPlansModelOrder) {
  auto ladder = Ladder::make(two_plans(), 132);
  TRTET_ASSERT_OK(ladder);
  EXPECT_EQ(ladder->size(), 2u);
  EXPECT_EQ(ladder->models(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ladder->plan(1).models[0].model, "a");
  EXPECT_EQ(ladder->plan(1).models[0].sms, 48u);
  EXPECT_EQ(ladder->find_plan("big"), 1u);
  EXPECT_FALSE(ladder->find_plan("huge").has_value());
  EXPECT_EQ(ladder->find_model("b"), 1u);
  EXPECT_FALSE(ladder->find_model("c").has_value());
}

TEST(SloLadder, PredictsLinearlyBetweenPointsAndNothingBeyondTheLast) {
  auto ladder = Ladder::make(two_plans(), 132);
  TRTET_ASSERT_OK(ladder);
  EXPECT_DOUBLE_EQ(*ladder->predict(0, 0, 0), 100);
  EXPECT_DOUBLE_EQ(*ladder->predict(0, 0, 50), 150);
  EXPECT_DOUBLE_EQ(*ladder->predict(0, 0, 100), 200);
  EXPECT_DOUBLE_EQ(*ladder->predict(0, 0, 150), 300);
  EXPECT_DOUBLE_EQ(*ladder->predict(0, 0, 200), 400);
  EXPECT_FALSE(ladder->predict(0, 0, 200.001).has_value());
  // Below the first measured rate: the first point's p99.
  auto later = Ladder::make({{"only", {{"a", 8, {{10, 70}, {20, 90}}}}}}, 8);
  TRTET_ASSERT_OK(later);
  EXPECT_DOUBLE_EQ(*later->predict(0, 0, 3), 70);
}

TEST(SloLadder, EveryRuleIsRefusedWithItsMessage) {
  using E = ErrorCode;
  TRTET_EXPECT_ERROR(Ladder::make(two_plans(), 0), E::kInvalidArgument, "SM count is 0");
  TRTET_EXPECT_ERROR(Ladder::make({}, 132), E::kInvalidArgument, "no plans");
  TRTET_EXPECT_ERROR(Ladder::make({{"empty", {}}}, 132), E::kInvalidArgument, "plan \"empty\" names no models");

  auto plans = two_plans();
  plans[1].name = "small";
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"small\" is named twice");

  plans = two_plans();
  plans[1].name = "";
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "empty name");

  plans = two_plans();
  plans[1].models.pop_back();  // big loses "a"
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"big\" does not name model \"a\"");

  plans = two_plans();
  plans[1].models.push_back({"c", 8, curve()});
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"big\" names model \"c\"",
                     "which plan \"small\" does not");

  plans = two_plans();
  plans[1].models[1].model = "b";
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"big\" names model \"b\" twice");

  plans = two_plans();
  plans[0].models[1].sms = 0;
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"small\" gives model \"b\" 0 SMs");

  plans = two_plans();
  plans[1].models[1].sms = 120;  // b 16 + a 120 = 136 > 132
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"big\" uses 136 SMs; the device has 132");
  TRTET_EXPECT_OK(Ladder::make(plans, 136));  // exactly the device's count is allowed

  plans = two_plans();
  plans[0].models[0].curve.clear();
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "no latency curve for model \"a\"");

  plans = two_plans();
  plans[0].models[0].curve = {{0, 100}, {200, 200}, {100, 300}};
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"small\", model \"a\"",
                     "not sorted by rate (point 2 at 100 calls/s after 200)");

  plans = two_plans();
  plans[0].models[0].curve = {{0, 100}, {100, 100}, {100, 300}};  // a rate twice
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "not sorted by rate");

  plans = two_plans();
  plans[0].models[1].curve = {{0, 100}, {100, -1}};
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "model \"b\": curve point 1",
                     "negative or not finite");

  plans = two_plans();
  plans[0].models[1].curve = {{-5, 100}};
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "curve point 0", "negative or not finite");

  plans = two_plans();
  plans[0].models[1].curve = {{0, 100}, {std::numeric_limits<double>::infinity(), 200}};
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "negative or not finite");

  // A name with control bytes is shown escaped.
  plans = two_plans();
  plans[1].name = "small";
  plans[0].name = plans[1].name = "x\n";
  TRTET_EXPECT_ERROR(Ladder::make(plans, 132), E::kInvalidArgument, "plan \"x\\x0a\" is named twice");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::slo
