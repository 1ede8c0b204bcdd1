// A model following a plan set, the parts that need neither a server nor a GPU: its parameters
// (triton/src/set_parameters.h) and the controller's loop fed with latencies on a clock of the test's
// own (triton/src/set_follower.h, Note [following the load]).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "set_follower.h"
#include "set_parameters.h"

namespace {

using trtet_triton::check_set_parameters;
using trtet_triton::LoadFollower;
using trtet_triton::read_set_parameter;
using trtet_triton::SetControl;
using trtet_triton::SetParameters;
namespace slo = torch_tensorrt::executorch_backend::slo;

std::string refusal(const std::string& key, const std::string& value) {
  SetParameters p;
  std::string why;
  EXPECT_TRUE(read_set_parameter(key, value, p, why)) << key;
  return why;
}

TEST(PlanSetParameters, ReadsEveryKey) {
  SetParameters p;
  std::string why;
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"plan_set_file", "ladder.json"}, {"plan_set_model", "chat"},
                                                        {"slo_p99_us", "250.5"}, {"slo_min_rate", "100"},
                                                        {"slo_window_s", "2"}, {"slo_interval_ms", "50"},
                                                        {"slo_margin", "0.2"}, {"slo_confirm", "5"},
                                                        {"slo_dwell_s", "1.5"}, {"slo_min_samples", "40"}}) {
    EXPECT_TRUE(read_set_parameter(key, value, p, why)) << key;
    EXPECT_EQ(why, "") << key;
  }
  EXPECT_EQ(*p.file, "ladder.json");
  EXPECT_EQ(*p.model, "chat");
  EXPECT_DOUBLE_EQ(*p.p99_us, 250.5);
  EXPECT_DOUBLE_EQ(p.min_rate, 100);
  EXPECT_DOUBLE_EQ(p.control.window_s, 2);
  EXPECT_EQ(p.control.interval_ms, 50u);
  EXPECT_DOUBLE_EQ(p.control.margin, 0.2);
  EXPECT_EQ(p.control.confirm, 5u);
  EXPECT_DOUBLE_EQ(p.control.dwell_s, 1.5);
  EXPECT_EQ(p.control.min_samples, 40u);
  EXPECT_TRUE(p.control_given);
  EXPECT_EQ(check_set_parameters(p, ""), "");
  EXPECT_EQ(p.control.text(),
            "slo_window_s 2, slo_interval_ms 50, slo_margin 0.2, slo_confirm 5, slo_dwell_s 1.5, slo_min_samples 40");
}

TEST(PlanSetParameters, OtherKeysAreNotTheirs) {
  SetParameters p;
  std::string why;
  EXPECT_FALSE(read_set_parameter("plan_file", "x.json", p, why));
  EXPECT_FALSE(read_set_parameter("slo_p95_us", "10", p, why));  // unknown: the caller names it
  EXPECT_FALSE(read_set_parameter("sms", "16", p, why));
  EXPECT_EQ(why, "");
}

TEST(PlanSetParameters, EveryNumberIsCheckedAndNamed) {
  EXPECT_EQ(refusal("slo_p99_us", "fast"),
            "parameter 'slo_p99_us' is 'fast'; it takes a number of microseconds from 1 to 10000000, written plainly "
            "(digits, an optional fraction)");
  for (const char* text : {"", "-5", "+5", "1e3", "0x10", "1.", ".5", "1.2.3", " 5", "5 ", "nan", "inf", "1234567890123456"}) {
    EXPECT_NE(refusal("slo_p99_us", text), "") << "'" << text << "'";
  }
  EXPECT_EQ(refusal("slo_p99_us", "0"), "parameter 'slo_p99_us' is 0; it takes 1 to 10000000 microseconds");
  EXPECT_EQ(refusal("slo_p99_us", "10000001"), "parameter 'slo_p99_us' is 10000001; it takes 1 to 10000000 microseconds");
  EXPECT_EQ(refusal("slo_min_rate", "1000001"), "parameter 'slo_min_rate' is 1000001; it takes 0 to 1000000 calls/s");
  EXPECT_EQ(refusal("slo_window_s", "0.01"), "parameter 'slo_window_s' is 0.01; it takes 0.05 to 10 seconds");
  EXPECT_EQ(refusal("slo_window_s", "11"), "parameter 'slo_window_s' is 11; it takes 0.05 to 10 seconds");
  EXPECT_EQ(refusal("slo_interval_ms", "2.5"),
            "parameter 'slo_interval_ms' is '2.5'; it takes a whole number of milliseconds from 10 to 60000, written "
            "plainly (digits)");
  EXPECT_EQ(refusal("slo_interval_ms", "5"), "parameter 'slo_interval_ms' is 5; it takes 10 to 60000 milliseconds");
  EXPECT_EQ(refusal("slo_margin", "11"), "parameter 'slo_margin' is 11; it takes 0 to 10 (a fraction)");
  EXPECT_EQ(refusal("slo_confirm", "0"), "parameter 'slo_confirm' is 0; it takes 1 to 1000 decisions");
  EXPECT_EQ(refusal("slo_dwell_s", "3601"), "parameter 'slo_dwell_s' is 3601; it takes 0 to 3600 seconds");
  EXPECT_EQ(refusal("slo_min_samples", "0"), "parameter 'slo_min_samples' is 0; it takes 1 to 100000 samples");
  EXPECT_EQ(refusal("plan_set_model", ""), "parameter 'plan_set_model' takes 1 to 64 characters (a model of the set)");
  EXPECT_EQ(refusal("plan_set_model", std::string(65, 'm')), "parameter 'plan_set_model' takes 1 to 64 characters (a model of the set)");
  EXPECT_EQ(refusal("plan_set_file", ""), "parameter 'plan_set_file' is empty; it names the plan set's file");
  // A long value is quoted only in part.
  EXPECT_LT(refusal("slo_p99_us", std::string(4000, 'x')).size(), 200u);
}

TEST(PlanSetParameters, TheKeysTogether) {
  SetParameters p;
  std::string why;
  ASSERT_TRUE(read_set_parameter("slo_p99_us", "100", p, why));
  EXPECT_EQ(check_set_parameters(p, ""),
            "the slo_* parameters and plan_set_model belong to a model that follows a plan set: give plan_set_file");
  EXPECT_FALSE(p.control_given);  // a target is the model's own, not the set's controller
  ASSERT_TRUE(read_set_parameter("plan_set_file", "s.json", p, why));
  EXPECT_EQ(check_set_parameters(p, ""), "");
  EXPECT_EQ(check_set_parameters(p, "a plan file (plan_file)"),
            "the parameters give both a plan set (plan_set_file) and a plan file (plan_file): give one (a plan set "
            "holds every partition the model runs on)");
  SetParameters rate_only;
  ASSERT_TRUE(read_set_parameter("plan_set_file", "s.json", rate_only, why));
  ASSERT_TRUE(read_set_parameter("slo_min_rate", "10", rate_only, why));
  EXPECT_EQ(check_set_parameters(rate_only, ""),
            "parameter 'slo_min_rate' is a rate the model's target must be met at: give slo_p99_us too");
  SetParameters none;
  EXPECT_EQ(check_set_parameters(none, ""), "");
}

// Two plans: "lat16" gives the latency model 16 SMs, "lat48" 48; bulk takes the rest.
slo::Ladder ladder() {
  auto made = slo::Ladder::make({{"lat16", {{"latency", 16, {{1000, 80}, {4000, 140}}}, {"bulk", 104, {{100, 900}, {400, 1500}}}}},
                                 {"lat48", {{"latency", 48, {{1000, 50}, {8000, 90}}}, {"bulk", 72, {{100, 1200}, {400, 2500}}}}}},
                                132);
  EXPECT_TRUE(made.ok()) << made.error().message();
  return std::move(*made);
}

// `rate` calls/s of `model` over (from, to], latency `us` each, handed in in shuffled order (several
// instances finish out of order).
void feed(LoadFollower& f, std::size_t model, double rate, double from, double to, double us, std::mt19937& rng) {
  std::vector<double> times;
  for (double t = from + 1.0 / rate; t <= to; t += 1.0 / rate) times.push_back(t);
  std::shuffle(times.begin(), times.end(), rng);
  for (double t : times) f.add(model, us, t);
}

TEST(LoadFollower, WithoutTargetsItTakesNothingAndDecidesNothing) {
  LoadFollower f(ladder(), SetControl{}, "lat16");
  EXPECT_FALSE(f.active());
  f.add(0, 100, 1.0);
  const auto tick = f.tick(1.0);
  EXPECT_FALSE(tick.decided);
  EXPECT_EQ(tick.dropped, 0u);
  LoadFollower none(std::nullopt, SetControl{}, "lat16");  // a set without curves
  EXPECT_EQ(none.set_targets({{"latency", 100, 0}}, "lat16"), "the plan set has no latency curves; a target needs them");
  EXPECT_FALSE(none.active());
  EXPECT_EQ(none.model_index("latency"), std::nullopt);
}

TEST(LoadFollower, ABadTargetChangesNothing) {
  LoadFollower f(ladder(), SetControl{}, "lat16");
  EXPECT_NE(f.set_targets({{"nobody", 100, 0}}, "lat16"), "");
  EXPECT_FALSE(f.active());
  EXPECT_NE(f.set_targets({{"latency", 100, 0}}, "no-such-plan"), "");
  EXPECT_EQ(f.set_targets({{"latency", 100, 0}}, "lat16"), "");
  EXPECT_TRUE(f.active());
  EXPECT_EQ(f.set_targets({}, "lat16"), "");
  EXPECT_FALSE(f.active());
}

TEST(LoadFollower, ARisingLoadMovesTheModelToTheBiggerPlanAfterConfirmation) {
  LoadFollower f(ladder(), SetControl{}, "lat16");  // margin 0.1, confirm 3, window 1 s
  ASSERT_EQ(f.set_targets({{"latency", 150, 0}}, "lat16"), "");
  const std::size_t latency = *f.model_index("latency");
  std::mt19937 rng(7);
  // 500 calls/s: lat16 predicts 80 us, lat48 50 us: headroom 1.875 against 3: lat48 wins by the
  // margin, so after 3 decisions in a row it switches (lat16 still meets the target meanwhile).
  std::vector<bool> switched;
  double t = 0;
  for (int k = 0; k < 5; ++k) {
    feed(f, latency, 500, t, t + 0.1, 60, rng);
    t += 0.1;
    const auto tick = f.tick(t);
    ASSERT_TRUE(tick.decided) << tick.error;
    EXPECT_TRUE(tick.decision.feasible);
    switched.push_back(tick.decision.switched);
    if (tick.decision.switched) {
      EXPECT_EQ(tick.decision.plan_name, "lat48");
      EXPECT_NE(tick.decision.message.find("switch from plan \"lat16\" to \"lat48\""), std::string::npos) << tick.decision.message;
    }
  }
  EXPECT_EQ(switched, (std::vector<bool>{false, false, true, false, false}));
}

TEST(LoadFollower, AnObservedMissSwitchesAtOnceAndLateSamplesAreTaken) {
  SetControl control;
  control.min_samples = 5;
  LoadFollower f(ladder(), control, "lat16");
  ASSERT_EQ(f.set_targets({{"latency", 150, 0}}, "lat16"), "");
  std::mt19937 rng(3);
  feed(f, 0, 200, 0, 1.0, 400, rng);  // observed p99 400 us > 150: the current plan misses
  auto tick = f.tick(1.0);
  ASSERT_TRUE(tick.decided) << tick.error;
  EXPECT_TRUE(tick.decision.switched);
  EXPECT_EQ(tick.decision.plan_name, "lat48");
  // A sample that finished before the last decision (handed in late) is taken at the decision's time.
  f.add(0, 60, 0.5);
  tick = f.tick(1.1);
  EXPECT_TRUE(tick.decided) << tick.error;
  EXPECT_EQ(tick.error, "");
  // A decision's time before the latest is raised to it: the clock never runs back.
  tick = f.tick(0.2);
  EXPECT_TRUE(tick.decided) << tick.error;
}

TEST(LoadFollower, AnInfeasibleTargetWarnsRateLimitedThenRecovers) {
  LoadFollower f(ladder(), SetControl{}, "lat16");
  ASSERT_EQ(f.set_targets({{"latency", 150, 9000}}, "lat16"), "");  // 9000 calls/s: beyond both curves
  std::vector<bool> warned;
  for (int k = 1; k <= 120; ++k) {  // 12 s of decisions every 0.1 s
    const auto tick = f.tick(0.1 * k);
    ASSERT_TRUE(tick.decided) << tick.error;
    EXPECT_FALSE(tick.decision.feasible);
    EXPECT_EQ(tick.decision.unmet, (std::vector<std::string>{"latency"}));
    warned.push_back(tick.warn);
  }
  EXPECT_EQ(std::count(warned.begin(), warned.end(), true), 2);  // the first, then 10 s later
  EXPECT_TRUE(warned.front());
  EXPECT_TRUE(warned[100]);
  // A target that can be met again (the controller made again): no warning left over.
  ASSERT_EQ(f.set_targets({{"latency", 150, 100}}, "lat16"), "");
  const auto tick = f.tick(12.5);
  EXPECT_TRUE(tick.decision.feasible);
  EXPECT_FALSE(tick.warn);
}

TEST(LoadFollower, FeasibleAgainIsSaidOnce) {
  LoadFollower f(ladder(), SetControl{}, "lat16");
  ASSERT_EQ(f.set_targets({{"latency", 60, 0}}, "lat16"), "");
  std::mt19937 rng(5);
  feed(f, 0, 7500, 0, 1.0, 50, rng);  // lat48 predicts ~87 us at 7500/s > 60: infeasible
  auto tick = f.tick(1.0);
  EXPECT_FALSE(tick.decision.feasible);
  EXPECT_TRUE(tick.warn);
  feed(f, 0, 100, 1.0, 3.0, 50, rng);  // the load drops: lat48 predicts 50 us
  tick = f.tick(3.0);
  EXPECT_TRUE(tick.decision.feasible) << tick.decision.message;
  EXPECT_TRUE(tick.feasible_again);
  tick = f.tick(3.1);
  EXPECT_FALSE(tick.feasible_again);
}

TEST(LoadFollower, TheBufferIsBoundedAndDropsAreCounted) {
  LoadFollower f(ladder(), SetControl{}, "lat16");
  ASSERT_EQ(f.set_targets({{"latency", 150, 0}}, "lat16"), "");
  for (std::size_t k = 0; k < LoadFollower::kMaxPending + 5; ++k) f.add(0, 50, 1e-6 * static_cast<double>(k));
  auto tick = f.tick(1.0);
  EXPECT_EQ(tick.dropped, 5u);
  EXPECT_TRUE(tick.decided) << tick.error;
  tick = f.tick(1.1);
  EXPECT_EQ(tick.dropped, 0u);
}

TEST(LoadFollower, ASwitchThatCouldNotBeAppliedIsUndone) {
  SetControl control;
  control.min_samples = 5;
  LoadFollower f(ladder(), control, "lat16");
  ASSERT_EQ(f.set_targets({{"latency", 150, 0}}, "lat16"), "");
  std::mt19937 rng(11);
  feed(f, 0, 200, 0, 1.0, 400, rng);
  auto tick = f.tick(1.0);
  ASSERT_TRUE(tick.decision.switched);
  f.undo_switch("lat16");
  tick = f.tick(1.1);  // still missing: it switches again
  EXPECT_TRUE(tick.decision.switched);
  EXPECT_EQ(tick.decision.plan_name, "lat48");
}

TEST(LoadFollower, ATargetNoPlanMeetsAloneIsNamed) {
  const slo::Ladder l = ladder();
  EXPECT_EQ(trtet_triton::target_alone_unmet(l, "latency", 150, 0), "");
  EXPECT_EQ(trtet_triton::target_alone_unmet(l, "latency", 40, 0),
            "the best, plan 'lat48', predicts a p99 of 50 us at 0 calls/s");
  EXPECT_EQ(trtet_triton::target_alone_unmet(l, "latency", 150, 9000), "no plan's measured curve reaches 9000 calls/s");
  EXPECT_EQ(trtet_triton::target_alone_unmet(l, "nobody", 150, 0), "the plan set has no model 'nobody'");
}

}  // namespace
