// GPU tests of trtet-plan on the waves test engine, whose time follows the SMs it gets (a launch
// of B blocks of T us on s SMs takes ceil(B / (s * r)) * T, r blocks resident per SM): the planner
// finds the known best plan, says which model an impossible target belongs to and its best, and
// the command line writes a plan file that applies on this GPU. Each runs in seconds.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "common/shell.h"
#include "engines/waves_engine.h"
#include "green/contains.h"
#include "plan/measure.h"
#include "plan/planner.h"

namespace trtet_plan {
namespace {

namespace et = torch_tensorrt::executorch_backend;

constexpr double kBlockUs = 200;  // spin_us of plan_waves_a (64 blocks) and plan_waves_b (16 blocks)

std::string program(const std::string& name) { return std::string(TRTET_PLAN_PROGRAM_DIR) + "/" + name + ".pte"; }

ModelSpec model(const std::string& name, const std::string& file, double p99_us) {
  ModelSpec m;
  m.name = name;
  m.program = program(file);
  m.p99_target_us = p99_us;
  m.shapes = {"1x1024"};
  return m;
}

// Per model of a curves file (model,sms,p50_us,p99_us,...,p99_target_us,...), the fewest SMs whose
// measured p99 meets the model's target; a model that meets it nowhere is left out.
std::map<std::string, unsigned> smallest_meeting(const std::string& path) {
  std::map<std::string, unsigned> out;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    if (f.size() < 6) continue;
    const unsigned sms = static_cast<unsigned>(std::stoul(f[1]));
    if (std::stod(f[3]) > std::stod(f[5])) continue;
    auto it = out.find(f[0]);
    if (it == out.end() || sms < it->second) out[f[0]] = sms;
  }
  return out;
}

class PlannerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    TRTET_SKIP_IF_GREEN_UNSUPPORTED();
    TRTET_SKIP_TIMING_UNDER_SANITIZER();
    if (!TRTET_PLAN_HAVE_PROGRAMS) GTEST_SKIP() << "the plan test programs were not generated (flatc not found)";
    auto occupancy = trtet_test::waves_occupancy(0);
    ASSERT_TRUE(occupancy.ok()) << occupancy.status().message();
    resident_ = occupancy->first;
    auto limits = et::green_context_limits(0);
    ASSERT_TRUE(limits.ok()) << limits.error().message();
    unit_ = limits->granularity;
    std::printf("waves kernel: %d block(s) per SM; partitions in steps of %u SMs, at most %u\n", resident_, unit_,
                limits->max_partitioned_sms);
  }

  // The smallest partition on which `blocks` run in at most `waves` waves: the known answer.
  unsigned known(unsigned blocks, unsigned waves) const {
    const unsigned sms = (blocks + waves * resident_ - 1) / (waves * resident_);
    return (sms + unit_ - 1) / unit_ * unit_;
  }

  PlanOptions options() const {
    PlanOptions o;
    o.iterations = 200;  // p99 is the 198th of 200: one stray call does not move it
    o.warmup = 5;
    o.rounds = 3;
    o.test_engines = true;
    return o;
  }

  int resident_ = 1;
  unsigned unit_ = 8;
};

TEST_F(PlannerGpu, FindsTheKnownBestPlan) {
  // A: 64 blocks, p99 <= 2.5 blocks' time: two waves at most. B: 16 blocks, <= 1.5: one wave.
  // Half a block (100 us) is left for the call's own overhead.
  PlanOptions o = options();
  o.models = {model("A", "plan_waves_a", 2.5 * kBlockUs), model("B", "plan_waves_b", 1.5 * kBlockUs)};
  auto r = run_planner_on_gpu(o, stdout);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const unsigned a_known = known(64, 2), b_known = known(16, 1);
  // The plan the measured curves hold: each model on its smallest size whose measured p99 meets its
  // target. That is the known size, unless a stray call put the p99 there over the target (a p99 of
  // 200 calls is their second slowest): then the planner must take the next size that meets it,
  // never a smaller one.
  auto smallest_meeting = [&](std::size_t m) {
    for (const CurvePoint& point : r->models[m].curve) {
      if (point.p99_us <= r->models[m].p99_target_us) return point.sms;
    }
    return 0u;
  };
  const unsigned a = smallest_meeting(0), b = smallest_meeting(1);
  std::printf("known best plan: A %u SMs, B %u SMs; by the measured p99: A %u, B %u\n", a_known, b_known, a, b);
  EXPECT_GE(a, a_known);
  EXPECT_GE(b, b_known);
  EXPECT_LE(a, a_known + unit_) << "more than one granule above the known size: not jitter";
  EXPECT_LE(b, b_known + unit_) << "more than one granule above the known size: not jitter";
  ASSERT_EQ(r->first.choices.size(), 2u);
  EXPECT_EQ(r->first.choices[0].sms, a);
  EXPECT_EQ(r->first.choices[1].sms, b);
  ASSERT_TRUE(r->exhaustive_ran);
  EXPECT_EQ(r->exhaustive.total_sms, r->first.total_sms);
  // The curve follows the waves: on the known sizes, p50 within the block time's half of the formula.
  for (std::size_t m = 0; m < 2; ++m) {
    const unsigned blocks = m == 0 ? 64 : 16;
    for (std::size_t i = 0; i < r->models[m].curve.size(); ++i) {
      const unsigned s = r->models[m].curve[i].sms;
      const double waves = std::ceil(static_cast<double>(blocks) / (s * resident_));
      EXPECT_GE(r->p50_us[m][i], waves * kBlockUs) << r->models[m].name << " on " << s;
      EXPECT_LE(r->p50_us[m][i], waves * kBlockUs + kBlockUs / 2) << r->models[m].name << " on " << s;
    }
  }
  EXPECT_TRUE(r->met) << "a spinning engine should not slow its neighbour";
  EXPECT_EQ(r->exit_code, kPlanOk);
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_EQ(r->plan->devices[0].partitions[0].sms, a);
  EXPECT_EQ(r->plan->devices[0].partitions[1].sms, b);
  for (const VerifyRow& row : r->final_rows) EXPECT_LE(row.p99_beside_us, row.p99_target_us) << row.model;
}

TEST_F(PlannerGpu, AnImpossibleTargetNamesTheModelAndItsBest) {
  PlanOptions o = options();
  o.sizes = "8:128:8";
  // No partition runs 64 blocks of 200 us in less than 200 us.
  o.models = {model("A", "plan_waves_a", 0.75 * kBlockUs), model("B", "plan_waves_b", 1.5 * kBlockUs)};
  auto r = run_planner_on_gpu(o, stdout);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, kPlanInfeasible);
  EXPECT_FALSE(r->plan.has_value());
  std::string text;
  for (const std::string& p : r->problems) text += p + "\n";
  EXPECT_CONTAINS(text, "model 'A' cannot meet p99 <= 150.0 us on any partition");
  EXPECT_EQ(text.find("model 'B' cannot"), std::string::npos) << text;
}

using trtet_test::Ran;
using trtet_test::run_shell;

TEST_F(PlannerGpu, TheCommandLineWritesAPlanThatApplies) {
  const std::string dir = ::testing::TempDir();
  const std::string plan_path = dir + "planner_gpu_test_plan.json";
  const std::string csv = dir + "planner_gpu_test";
  const Ran ran = run_shell(std::string("'") + TRTET_PLAN_BINARY + "' --test-engines -n 200 --warmup 5 --sizes 8:64:8" +
                            " --model name=A,program=" + program("plan_waves_a") + ",p99_us=500,shape=1x1024" +
                            " --model name=B,program=" + program("plan_waves_b") + ",p99_us=300,shape=1x1024" +
                            " --out " + plan_path + " --csv " + csv);
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, kPlanOk) << ran.output;
  EXPECT_CONTAINS(ran.output, "p99 beside (us)");
  EXPECT_CONTAINS(ran.output, "exhaustive search of the same curves");
  EXPECT_CONTAINS(ran.output, "plan written to " + plan_path);
  auto plan = et::read_partition_plan(plan_path);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_TRUE(plan->any_device());
  // Each model's partition is the smallest of its measured curve that meets its target: the file
  // the command line wrote holds the search over the curves it measured. The engines' nominal costs
  // (known(64, 2) and known(16, 1)) are FindsTheKnownBestPlan's to check; here one slow p99 at one
  // size moves the pick, as it did on a busy host (B's p99 at 16 SMs read 3615 us where it ran
  // 216 us at 8 and 24).
  const std::map<std::string, unsigned> smallest = smallest_meeting(csv + "_curves.csv");
  ASSERT_EQ(smallest.size(), 2u) << "curves of models A and B in " << csv << "_curves.csv";
  const bool one_round = ran.output.find("-- round 2") == std::string::npos;
  ASSERT_EQ(plan->devices[0].partitions.size(), 2u);
  for (const auto& partition : plan->devices[0].partitions) {
    ASSERT_TRUE(smallest.count(partition.name)) << partition.name;
    const unsigned from_curve = smallest.at(partition.name);
    if (one_round) {
      EXPECT_EQ(partition.sms, from_curve) << partition.name;
    } else {  // a model that missed beside the others was given more
      EXPECT_GE(partition.sms, from_curve) << partition.name;
    }
  }
  EXPECT_EQ(plan->devices[0].remainder_name, "headroom");
  auto parts = et::apply_partition_plan(*plan, 0);
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  ASSERT_TRUE(parts->get("A").ok());
  EXPECT_EQ((*parts->get("A"))->sm_count(), plan->devices[0].partitions[0].sms);
  EXPECT_TRUE(parts->get("headroom").ok());
  std::ifstream curves(csv + "_curves.csv"), verify(csv + "_verify.csv");
  std::string header;
  EXPECT_TRUE(std::getline(curves, header));
  EXPECT_EQ(header, "model,sms,p50_us,p99_us,calls_per_s,p99_target_us,min_calls_per_s");
  EXPECT_TRUE(std::getline(verify, header));
  EXPECT_CONTAINS(header, "p99_beside_us");
}

}  // namespace
}  // namespace trtet_plan
