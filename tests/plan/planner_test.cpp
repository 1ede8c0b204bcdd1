// CPU tests of trtet-plan's rounds (tools/plan/planner.h) over a fake Measurer: the GPU's numbers
// come from the waves formula, and side by side each model is slowed by a factor the test sets.
// A plan met at once; a miss beside the others moves that model and is verified again; a miss no
// plan can absorb, and rounds that run out, are reported against the model; the remainder and its
// load are asked for as the options say.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/error_match.h"
#include "green/contains.h"
#include "plan/planner.h"

namespace trtet_plan {
namespace {

namespace et = torch_tensorrt::executorch_backend;

struct FakeModel {
  unsigned blocks;
  double block_us;
  double beside_factor = 1.0;  // p99 beside the others / p99 alone
};

class FakeMeasurer : public Measurer {
 public:
  FakeMeasurer(std::vector<FakeModel> models, unsigned max_partitioned = 128)
      : models_(std::move(models)), max_(max_partitioned) {}

  static double alone_us(const FakeModel& m, unsigned sms) {
    return std::ceil(static_cast<double>(m.blocks) / sms) * m.block_us + 10;
  }

  ex::Result<et::PlanGpu> gpu() override { return et::PlanGpu{0, "Fake H200", 132, 8, 8, 8, max_}; }

  ex::Result<Curves> curves(const std::vector<unsigned>& sizes, std::FILE*) override {
    sizes_ = sizes;
    Curves c;
    for (const FakeModel& m : models_) {
      c.points.emplace_back();
      c.p50_us.emplace_back();
      for (unsigned s : sizes) {
        const double us = alone_us(m, s);
        c.points.back().push_back(CurvePoint{s, us, 1e6 / us});
        c.p50_us.back().push_back(us - 5);
      }
    }
    return c;
  }

  ex::Result<std::vector<trtet_run::LatencyStats>> side_by_side(const std::vector<unsigned>& sms, bool keep,
                                                                bool load) override {
    if (fail_) return ex::make_error(ex::ErrorCode::kInternal, "model 'A' beside the others: the engine failed");
    rounds_.push_back(sms);
    keep_.push_back(keep);
    load_.push_back(load);
    std::vector<trtet_run::LatencyStats> stats;
    for (std::size_t i = 0; i < sms.size(); ++i) {
      trtet_run::LatencyStats s;
      s.p99_us = alone_us(models_[i], sms[i]) * models_[i].beside_factor;
      s.p50_us = s.p99_us - 5;
      s.calls_per_s = 1e6 / s.p99_us;
      stats.push_back(s);
    }
    return stats;
  }

  std::vector<FakeModel> models_;
  unsigned max_;
  bool fail_ = false;
  std::vector<unsigned> sizes_;
  std::vector<std::vector<unsigned>> rounds_;
  std::vector<bool> keep_, load_;
};

ModelSpec spec(const std::string& name, double p99_us) {
  ModelSpec m;
  m.name = name;
  m.program = name + ".pte";
  m.p99_target_us = p99_us;
  return m;
}

PlanOptions options(std::vector<ModelSpec> models) {
  PlanOptions o;
  o.models = std::move(models);
  return o;
}

std::string problems(const PlannerResult& r) {
  std::string text;
  for (const std::string& p : r.problems) text += p + "\n";
  return text;
}

TEST(Planner, APlanMetAtOnce) {
  FakeMeasurer gpu({{64, 100}, {16, 50}});
  auto r = run_planner(options({spec("A", 250), spec("B", 120)}), gpu, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, kPlanOk);
  EXPECT_TRUE(r->met);
  EXPECT_EQ(gpu.sizes_.size(), 16u);  // every size the GPU allows: 8..128
  ASSERT_EQ(gpu.rounds_.size(), 1u);
  EXPECT_EQ(gpu.rounds_[0], (std::vector<unsigned>{32, 8}));
  EXPECT_TRUE(gpu.keep_[0]);  // the remainder is named "headroom" by default
  EXPECT_FALSE(gpu.load_[0]);
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_EQ(r->plan->devices[0].remainder_name, "headroom");
  EXPECT_EQ(r->plan->devices[0].partitions[0].program, "A.pte");
  EXPECT_DOUBLE_EQ(r->plan->devices[0].partitions[0].p99_alone_us, 210);
  EXPECT_DOUBLE_EQ(r->plan->devices[0].partitions[0].p99_beside_us, 210);
  EXPECT_TRUE(r->exhaustive_ran);
  EXPECT_EQ(r->exhaustive.total_sms, 40u);
  EXPECT_TRUE(et::partition_plan_json(*r->plan).ok());
}

TEST(Planner, AMissBesideTheOthersMovesThatModelAndIsVerifiedAgain) {
  // A: 210 us alone on 32 SMs, 30 % slower beside B: 273 > 250. B is unaffected.
  FakeMeasurer gpu({{64, 100, 1.3}, {16, 50}});
  auto r = run_planner(options({spec("A", 250), spec("B", 120)}), gpu, stdout);  // the report, as printed
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->met) << problems(*r);
  ASSERT_EQ(gpu.rounds_.size(), 2u);
  EXPECT_EQ(gpu.rounds_[0], (std::vector<unsigned>{32, 8}));
  EXPECT_EQ(gpu.rounds_[1], (std::vector<unsigned>{64, 8}));  // one wave: 110 us alone, 143 beside
  EXPECT_EQ(r->verify.size(), 4u);
  EXPECT_FALSE(r->verify[0].meets);
  EXPECT_TRUE(r->verify[1].meets);
  EXPECT_EQ(r->verify[2].round, 2);
  EXPECT_NEAR(r->models[0].interference, 1.3 * 1.02, 1e-9);
  EXPECT_DOUBLE_EQ(r->models[1].interference, 1.0);
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_EQ(r->plan->devices[0].partitions[0].sms, 64u);
  EXPECT_NEAR(r->plan->devices[0].partitions[0].p99_beside_us, 143, 1e-9);
  // The search before verification is what the exhaustive search is compared with.
  EXPECT_EQ(r->first.total_sms, 40u);
}

TEST(Planner, AMissNoPlanCanAbsorbIsReportedAgainstTheModel) {
  FakeMeasurer gpu({{64, 100, 3.0}, {16, 50}});  // beside B, A needs < 84 us alone: never
  auto r = run_planner(options({spec("A", 250), spec("B", 120)}), gpu, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, kPlanInfeasible);
  EXPECT_FALSE(r->plan.has_value());
  const std::string text = problems(*r);
  EXPECT_CONTAINS(text, "beside the others no plan meets every target (the curves alone did)");
  EXPECT_CONTAINS(text, "model 'A' cannot meet p99 <= 250.0 us on any partition");
  EXPECT_EQ(text.find("model 'B' cannot"), std::string::npos) << text;
}

TEST(Planner, RoundsThatRunOutNameTheModelThatMissed) {
  FakeMeasurer gpu({{64, 100, 1.3}, {16, 50}});
  PlanOptions o = options({spec("A", 250), spec("B", 120)});
  o.rounds = 1;
  auto r = run_planner(o, gpu, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, kPlanInfeasible);
  EXPECT_CONTAINS(problems(*r), "model 'A' misses beside the others after 1 round(s): p99 273.0 us against 250.0 us "
                                "on 32 SMs (210.0 us alone)");
}

TEST(Planner, InfeasibleAloneIsReportedWithoutVerifying) {
  FakeMeasurer gpu({{72, 100}, {72, 100}});  // 72 SMs each for one wave; 144 > 128
  auto r = run_planner(options({spec("A", 150), spec("B", 150)}), gpu, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, kPlanInfeasible);
  EXPECT_TRUE(gpu.rounds_.empty());
  EXPECT_CONTAINS(problems(*r), "together they need 144 SMs");
}

TEST(Planner, PlansWithinWhatThisGpusSplitHandsOut) {
  FakeMeasurer gpu({{64, 100}, {64, 100}}, /*max_partitioned=*/120);
  auto r = run_planner(options({spec("A", 150), spec("B", 150)}), gpu, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(gpu.sizes_.back(), 120u);
  EXPECT_EQ(r->exit_code, kPlanInfeasible);
  EXPECT_CONTAINS(problems(*r), "(120 of the GPU's 132 SMs)");
}

TEST(Planner, RemainderAndLoadAsAsked) {
  FakeMeasurer none({{64, 100}});
  PlanOptions o = options({spec("A", 250)});
  o.remainder = "none";
  auto r = run_planner(o, none, nullptr);
  ASSERT_TRUE(r.ok() && r->plan.has_value());
  EXPECT_FALSE(none.keep_[0]);
  EXPECT_TRUE(r->plan->devices[0].remainder_name.empty());

  FakeMeasurer loaded({{64, 100}});
  o.load_remainder = true;
  r = run_planner(o, loaded, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(loaded.keep_[0]);  // the load needs the remainder partition, named or not
  EXPECT_TRUE(loaded.load_[0]);
}

TEST(Planner, SizesAreFilteredToWhatTheGpuMakes) {
  FakeMeasurer gpu({{64, 100}});
  PlanOptions o = options({spec("A", 250)});
  o.sizes = "4:136:4";
  auto r = run_planner(o, gpu, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(gpu.sizes_.front(), 8u);
  EXPECT_EQ(gpu.sizes_.back(), 128u);
  EXPECT_EQ(gpu.sizes_.size(), 16u);
  o.sizes = "4:4:4";
  FakeMeasurer none({{64, 100}});
  auto refused = run_planner(o, none, nullptr);
  ASSERT_FALSE(refused.ok());
  TRTET_EXPECT_ERROR_SAYS(refused.status(), "no size this GPU can split off");
}

TEST(Planner, AMeasurementFailureIsAnError) {
  FakeMeasurer gpu({{64, 100}});
  gpu.fail_ = true;
  auto r = run_planner(options({spec("A", 250)}), gpu, nullptr);
  ASSERT_FALSE(r.ok());
  TRTET_EXPECT_ERROR_SAYS(r.status(), "the engine failed");
}

}  // namespace
}  // namespace trtet_plan
