// CPU tests of trtet-plan --plan-set (tools/plan/plan_set_select.h, Note [plan set selection]): the
// plans selected over known curves (two models competing for one split's SMs), the set file they make
// (read back by parse_plan_set and plan_set_ladder), and bad input refused with the reason: --rate
// malformed, a model without a curve, more plans than sizes, and the command line's rules.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "plan/options.h"
#include "plan/plan_set_select.h"

namespace trtet_plan {
namespace {

using ex::slo::CurvePoint;
constexpr auto kInvalid = ex::ErrorCode::kInvalidArgument;

// A model measured one call at a time: on s SMs it sustains per_sm * s calls/s at a p99 of work / s µs.
SetModel model(const std::string& name, double target_us, double low, double high, double per_sm, double work,
               const std::vector<unsigned>& sizes) {
  SetModel m{name, target_us, low, high, name + ".pte", {}};
  for (unsigned s : sizes) m.curves.push_back({CurvePoint{per_sm * s, work / s}});
  return m;
}

// The H200's shape, with one split handing out 96 SMs.
SetInput two_models() {
  SetInput in;
  in.gpu = GpuShape{132, 8, 96};
  for (unsigned s = 8; s <= 96; s += 8) in.sizes.push_back(s);
  // latency: p99 8000/s µs (32 SMs and up meet 300 µs), 100 calls/s per SM: 6000/s needs 64 SMs.
  in.models.push_back(model("latency", 300, 500, 6000, 100, 8000, in.sizes));
  // batch: p99 40000/s µs (24 SMs and up meet 2000 µs), 50 calls/s per SM: 2400/s needs 48 SMs.
  in.models.push_back(model("batch", 2000, 200, 2400, 50, 40000, in.sizes));
  return in;
}

ex::PlanGpu h200() {
  ex::PlanGpu gpu;
  gpu.name = "NVIDIA H200";
  gpu.sm_count = 132;
  gpu.min_partition = 8;
  gpu.alignment = 8;
  gpu.granularity = 8;
  gpu.max_partitioned_sms = 96;
  return gpu;
}

TEST(PlanSetSelect, RateRanges) {
  auto r = parse_rate_range("latency=500:4000");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->model, "latency");
  EXPECT_EQ(r->low_per_s, 500);
  EXPECT_EQ(r->high_per_s, 4000);
  auto fixed = parse_rate_range("a.b-c=0:2.5e3");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->high_per_s, 2500);
  TRTET_EXPECT_ERROR(parse_rate_range("latency=500"), kInvalid, "expected MODEL=LOW:HIGH");
  TRTET_EXPECT_ERROR(parse_rate_range("latency:500:600"), kInvalid, "expected MODEL=LOW:HIGH");
  TRTET_EXPECT_ERROR(parse_rate_range("=1:2"), kInvalid, "the model's name");
  TRTET_EXPECT_ERROR(parse_rate_range("a=x:5"), kInvalid, "LOW and HIGH must be numbers");
  TRTET_EXPECT_ERROR(parse_rate_range("a=-1:5"), kInvalid, "LOW and HIGH must be numbers");
  TRTET_EXPECT_ERROR(parse_rate_range("a=1:2:3"), kInvalid, "LOW and HIGH must be numbers");
  TRTET_EXPECT_ERROR(parse_rate_range("a=1:nan"), kInvalid, "LOW and HIGH must be numbers");
  TRTET_EXPECT_ERROR(parse_rate_range("a=5:1"), kInvalid, "LOW must be at most HIGH");
  TRTET_EXPECT_ERROR(parse_rate_range("a=0:0"), kInvalid, "HIGH above 0");
}

// 16 mixes (4 rates each). Latency needs 32 SMs, 64 at its top rate; batch 24, 48 at its top rate. Both
// tops together (112 SMs) exceed the split: that mix is reported, the rest covered by two plans that
// trade SMs between the models.
TEST(PlanSetSelect, TwoModelsCompetingGetPlansTradingSms) {
  const SetInput in = two_models();
  auto sel = select_plan_set(in);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(sel->mixes.size(), 15u);
  EXPECT_EQ(sel->infeasible, 1u);
  EXPECT_EQ(sel->uncovered, 0u);
  ASSERT_EQ(sel->plans.size(), 2u);
  EXPECT_EQ(sel->plans[0], (std::vector<unsigned>{32, 48}));  // smallest first
  EXPECT_EQ(sel->plans[1], (std::vector<unsigned>{64, 24}));
  ASSERT_EQ(sel->problems.size(), 1u);
  EXPECT_NE(sel->problems[0].find("latency=6000/s batch=2400/s"), std::string::npos) << sel->problems[0];
  EXPECT_NE(sel->problems[0].find("more SMs than one split hands out (96)"), std::string::npos) << sel->problems[0];
  for (std::size_t x = 0; x < sel->mixes.size(); ++x) EXPECT_GE(sel->covered_by[x], 0) << "mix " << x;
  const std::string report = selection_report(in, *sel);
  EXPECT_NE(report.find("plan-1  latency 32 SMs batch 48 SMs"), std::string::npos) << report;

  // The set file: every model's curve on its size in every plan, read back, and the SLO controller's ladder.
  auto set = make_plan_set(in, *sel, h200());
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto text = ex::plan_set_json(*set);
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto back = ex::parse_plan_set(*text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->plans.size(), 2u);
  EXPECT_EQ(back->plans[0].name, "plan-1");
  EXPECT_TRUE(back->plans[0].remainder_name.empty());
  EXPECT_EQ(back->plans[1].partitions[0].sms, 64u);
  EXPECT_EQ(back->plans[1].partitions[0].p99_target_us, 300);
  ASSERT_EQ(back->plans[1].curves.size(), 2u);
  for (const ex::ModelCurve& c : back->plans[1].curves) {  // each model's point on its size
    EXPECT_EQ(c.points.at(0).rate_per_s, c.model == "latency" ? 6400 : 1200) << c.model;
  }
  auto ladder = ex::plan_set_ladder(*back);
  ASSERT_TRUE(ladder.ok()) << ladder.status().message();
  ASSERT_EQ(ladder->size(), 2u);
  EXPECT_FALSE(ladder->predict(0, 0, 6000).has_value()) << "plan-1 cannot carry latency at 6000/s";
  EXPECT_DOUBLE_EQ(*ladder->predict(1, 0, 6000), 125);

  // One plan asked for: the one that covers the most mixes; the rest reported.
  SetInput one = in;
  one.max_plans = 1;
  auto single = select_plan_set(one);
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->plans.size(), 1u);
  EXPECT_EQ(single->plans[0], (std::vector<unsigned>{32, 48}));
  EXPECT_EQ(single->uncovered, 3u);
}

// A curve of several points, judged as the SLO controller predicts (linear between points): 16 SMs meet
// 300 µs up to 1500 calls/s, 32 SMs up to past 4000. Where one plan covers every mix, one is taken.
TEST(PlanSetSelect, CurvesArePredictedAsTheControllerDoes) {
  SetInput in;
  in.gpu = GpuShape{132, 8, 96};
  in.sizes = {16, 32};
  in.models.push_back({"latency", 300, 500, 1400, "", {{{1000, 200}, {3000, 600}}, {{2000, 100}, {5000, 250}}}});
  in.levels = 2;
  in.max_plans = 2;
  auto sel = select_plan_set(in);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(sel->plans, (std::vector<std::vector<unsigned>>{{16}}));
  in.models[0].high_per_s = 4000;
  sel = select_plan_set(in);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->plans, (std::vector<std::vector<unsigned>>{{32}}));
  EXPECT_EQ(sel->uncovered + sel->infeasible, 0u);
  in.models[0].high_per_s = 6000;  // beyond both curves: infeasible, and no plan at all
  in.models[0].low_per_s = 5500;
  sel = select_plan_set(in);
  ASSERT_TRUE(sel.ok());
  EXPECT_TRUE(sel->plans.empty());
  EXPECT_EQ(sel->infeasible, 2u);
  TRTET_EXPECT_ERROR(make_plan_set(in, *sel, h200()), kInvalid, "no plan was selected");
}

TEST(PlanSetSelect, BadInputIsRefusedWithTheReason) {
  SetInput in = two_models();
  in.models[1].curves[1].clear();
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "model 'batch' has no curve on 16 SMs");
  in = two_models();
  in.models[0].curves.pop_back();
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "model 'latency' has 11 curves for 12 measured sizes");
  in = two_models();
  in.models[0].curves[2] = {{100, 50}, {100, 60}};
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "model 'latency': its curve on 24 SMs");
  in = two_models();
  in.sizes = {16, 32};
  for (SetModel& m : in.models) m.curves.resize(2);
  in.max_plans = 3;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "--plans 3: only 2 partition size(s) are measured");
  in = two_models();
  in.max_plans = 17;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "a plan set holds 1 to 16 plans");
  in.max_plans = 0;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "a plan set holds 1 to 16 plans");
  in = two_models();
  in.levels = 1;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "--rate-levels 1");
  in = two_models();
  in.models[0].low_per_s = 7000;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "model 'latency': its rate range 7000:6000");
  in = two_models();
  in.models[0].p99_target_us = 0;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "model 'latency': its p99 target");
  in = two_models();
  in.sizes[3] = 12;
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "size 12 SMs: the sizes must rise");
  in = two_models();
  in.models.clear();
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "no model to plan");
  in = two_models();
  in.levels = 16;
  for (int i = 0; i < 3; ++i) in.models.push_back(model("m" + std::to_string(i), 100, 1, 2, 1, 1, in.sizes));
  TRTET_EXPECT_ERROR(select_plan_set(in), kInvalid, "more than 65536 mixes");
}

class PlanSetOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = ::testing::TempDir() + "plan_set_select_test_" + std::to_string(::getpid()) + ".pte";
    std::ofstream(program_) << "x";
  }
  void TearDown() override { std::remove(program_.c_str()); }
  PlanParse parse(std::vector<std::string> args) {
    std::vector<std::string> all = {"trtet-plan", "--model", "name=a,program=" + program_ + ",p99_us=100", "--model",
                                    "name=b,program=" + program_ + ",p99_us=900"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (const std::string& s : all) argv.push_back(s.c_str());
    return parse_plan_options(static_cast<int>(argv.size()), argv.data(), false);
  }
  std::string program_;
};

TEST_F(PlanSetOptions, PlanSetModeReadsRatesPerModel) {
  const PlanParse ok = parse({"--plan-set", "set.json", "--rate", "a=100:1000", "--rate", "b=0:50", "--plans", "3"});
  ASSERT_TRUE(ok.run) << ok.message;
  EXPECT_EQ(ok.options.plan_set_out, "set.json");
  EXPECT_EQ(ok.options.max_plans, 3);
  EXPECT_EQ(ok.options.rate_levels, 4);
  EXPECT_EQ(ok.options.remainder, "none");
  ASSERT_EQ(ok.options.rates.size(), 2u);
  EXPECT_EQ(ok.options.rates[1].first, "b");
  EXPECT_EQ(ok.options.rates[1].second.second, 50);

  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const PlanParse p = parse(std::move(args));
    EXPECT_FALSE(p.run) << says;
    EXPECT_EQ(p.exit_code, kPlanUsage) << says;
    EXPECT_NE(p.message.find(says), std::string::npos) << p.message;
  };
  refused({"--plan-set", "s.json", "--rate", "a=100:1000"}, "model 'b' has no --rate LOW:HIGH");
  refused({"--plan-set", "s.json", "--rate", "a=100:1000", "--rate", "c=1:2", "--rate", "b=1:2"},
          "no --model is named 'c'");
  refused({"--plan-set", "s.json", "--rate", "a=1:2", "--rate", "a=1:3", "--rate", "b=1:2"}, "'a' is given twice");
  refused({"--plan-set", "s.json", "--rate", "a=100-1000", "--rate", "b=1:2"}, "expected MODEL=LOW:HIGH");
  refused({"--plan-set", "s.json", "--rate", "a=1:2", "--rate", "b=1:2", "--plans", "17"}, "--plans: 1 to 16");
  refused({"--plan-set", "s.json", "--rate", "a=1:2", "--rate", "b=1:2", "--rate-levels", "1"}, "--rate-levels: 2 to 16");
  refused({"--plan-set", "s.json", "--rate", "a=1:2", "--rate", "b=1:2", "--remainder", "rest"},
          "a plan set has no remainder");
  refused({"--rate", "a=1:2", "--rate", "b=1:2"}, "are for --plan-set");
  refused({"--plans", "2"}, "are for --plan-set");
}

}  // namespace
}  // namespace trtet_plan
