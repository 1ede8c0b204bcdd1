// CPU tests of trtet-plan's search (tools/plan/search.h, Note [plan search]): the known best plan
// of curves with a known answer, the same total as the exhaustive search on random curves, the
// infeasible reports, what the verification's interference does, and the search's cost.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "common/random.h"
#include "green/contains.h"
#include "plan/search.h"

namespace trtet_plan {
namespace {

const GpuShape kH200{132, 8, 128};  // the README's H200: 16 groups of 8 in one split
const GpuShape kH200Of120{132, 8, 120};  // an H200 whose split makes 15 groups

// A waves engine's curve: B blocks of T us each, one block per SM at a time, plus `overhead` us.
std::vector<CurvePoint> waves_curve(unsigned blocks, double block_us, double overhead_us, const GpuShape& gpu) {
  std::vector<CurvePoint> curve;
  for (unsigned s : valid_sizes(gpu)) {
    const double us = std::ceil(static_cast<double>(blocks) / s) * block_us + overhead_us;
    curve.push_back(CurvePoint{s, us, 1e6 / us});
  }
  return curve;
}

ModelNeeds waves(const std::string& name, unsigned blocks, double block_us, double target_us,
                 const GpuShape& gpu = kH200) {
  ModelNeeds m;
  m.name = name;
  m.p99_target_us = target_us;
  m.curve = waves_curve(blocks, block_us, 10, gpu);
  return m;
}

std::vector<unsigned> sizes_of(const SearchResult& r) {
  std::vector<unsigned> sizes;
  for (const Choice& c : r.choices) sizes.push_back(c.sms);
  return sizes;
}

std::string problems_of(const SearchResult& r) {
  std::string text;
  for (const std::string& p : r.problems) text += p + "\n";
  return text;
}

TEST(PlanSearch, ValidSizesAreMultiplesOfTheUnitUpToWhatOneSplitGives) {
  EXPECT_EQ(valid_sizes(kH200).size(), 16u);
  EXPECT_EQ(valid_sizes(kH200).front(), 8u);
  EXPECT_EQ(valid_sizes(kH200).back(), 128u);
  EXPECT_EQ(valid_sizes(kH200Of120).back(), 120u);
  EXPECT_TRUE(valid_sizes(GpuShape{132, 0, 128}).empty());
}

TEST(PlanSearch, FindsTheKnownBestPlan) {
  // A: 64 blocks x 100 us, p99 <= 250 us: two waves at most, so 32 SMs (24 SMs: 3 waves, 310 us).
  // B: 16 blocks x 50 us, <= 120 us: 8 SMs (2 waves, 110 us).
  // C: 128 blocks x 20 us, <= 90 us: four waves at most, 32 SMs (24: 6 waves, 130 us).
  const std::vector<ModelNeeds> models = {waves("A", 64, 100, 250), waves("B", 16, 50, 120), waves("C", 128, 20, 90)};
  const SearchResult r = search_plan(models, kH200);
  ASSERT_TRUE(r.feasible) << problems_of(r);
  EXPECT_EQ(sizes_of(r), (std::vector<unsigned>{32, 8, 32}));
  EXPECT_EQ(r.total_sms, 72u);
  EXPECT_EQ(r.headroom_sms, 60u);
  EXPECT_DOUBLE_EQ(r.choices[0].p99_us, 210.0);
  EXPECT_TRUE(r.problems.empty());
  const SearchResult best = exhaustive_search(models, kH200);
  ASSERT_TRUE(best.feasible);
  EXPECT_EQ(best.total_sms, r.total_sms);
}

TEST(PlanSearch, SizesTheGpuCannotSplitOffAreIgnored) {
  ModelNeeds m = waves("A", 64, 100, 250);
  // A whole-GPU point (132 SMs), an unaligned one and one beyond the split's 128: all faster, none usable.
  m.curve.push_back(CurvePoint{132, 50, 20000});
  m.curve.push_back(CurvePoint{12, 50, 20000});
  m.curve.push_back(CurvePoint{0, 50, 20000});
  const SearchResult r = search_plan({m}, kH200);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(sizes_of(r), (std::vector<unsigned>{32}));
}

TEST(PlanSearch, MinimumCallsPerSecondCanNeedMoreSms) {
  ModelNeeds m = waves("A", 64, 100, 1000);  // p99 alone: 8 SMs (8 waves, 810 us)
  EXPECT_EQ(sizes_of(search_plan({m}, kH200)), (std::vector<unsigned>{8}));
  m.min_calls_per_s = 4000;  // 1e6 / 210 us = 4762 calls/s at 32 SMs; 1e6 / 310 = 3226 at 24
  const SearchResult r = search_plan({m}, kH200);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(sizes_of(r), (std::vector<unsigned>{32}));
  EXPECT_GE(r.choices[0].calls_per_s, 4000);
}

TEST(PlanSearch, AModelThatCannotBeMetIsNamedWithItsBest) {
  // 64 blocks x 100 us can never finish under 110 us (one wave at 64 SMs or more).
  const std::vector<ModelNeeds> models = {waves("fast", 16, 50, 120), waves("impossible", 64, 100, 100)};
  const SearchResult r = search_plan(models, kH200);
  EXPECT_FALSE(r.feasible);
  const std::string text = problems_of(r);
  EXPECT_CONTAINS(text, "model 'impossible' cannot meet p99 <= 100.0 us on any partition");
  EXPECT_CONTAINS(text, "110.0 us p99 on 64 SMs");  // its best, with 8 SMs left for the other model
  EXPECT_CONTAINS(text, "1.10x");
  EXPECT_EQ(text.find("'fast' cannot"), std::string::npos) << text;
  // The closest plan: every model as near its target as one split allows.
  ASSERT_EQ(r.choices.size(), 2u);
  EXPECT_NEAR(r.worst_ratio, 1.1, 1e-9);
  EXPECT_EQ(exhaustive_search(models, kH200).worst_ratio, r.worst_ratio);
}

TEST(PlanSearch, ModelsThatFitAloneButNotTogetherAreReported) {
  // Each needs 72 SMs (one wave of 72 blocks); together 144 > 128.
  const std::vector<ModelNeeds> models = {waves("left", 72, 100, 150), waves("right", 72, 100, 150)};
  const SearchResult r = search_plan(models, kH200);
  EXPECT_FALSE(r.feasible);
  const std::string text = problems_of(r);
  EXPECT_CONTAINS(text, "together they need 144 SMs ('left' 72, 'right' 72)");
  EXPECT_CONTAINS(text, "more than one split hands out (128 of the GPU's 132 SMs)");
  EXPECT_CONTAINS(text, "the plan closest to every target misses by at most");
}

TEST(PlanSearch, PlansWithinWhatThisGpusSplitHandsOut) {
  // 64 + 64 fits the 128 one split gives on one H200, not the 120 of another.
  const std::vector<ModelNeeds> at128 = {waves("a", 64, 100, 150), waves("b", 64, 100, 150)};
  EXPECT_TRUE(search_plan(at128, kH200).feasible);
  const std::vector<ModelNeeds> at120 = {waves("a", 64, 100, 150, kH200Of120), waves("b", 64, 100, 150, kH200Of120)};
  const SearchResult r = search_plan(at120, kH200Of120);
  EXPECT_FALSE(r.feasible);
  EXPECT_CONTAINS(problems_of(r), "more than one split hands out (120 of the GPU's 132 SMs)");
}

TEST(PlanSearch, TooManyModelsForTheGpuIsSaid) {
  std::vector<ModelNeeds> models;
  for (int i = 0; i < 17; ++i) models.push_back(waves("m" + std::to_string(i), 8, 10, 1000));
  const SearchResult r = search_plan(models, kH200);
  EXPECT_FALSE(r.feasible);
  EXPECT_CONTAINS(problems_of(r), "17 models need at least 136 SMs");
}

TEST(PlanSearch, BadInputsAreProblemsNotCrashes) {
  ModelNeeds no_target = waves("t", 8, 10, 0);
  EXPECT_CONTAINS(problems_of(search_plan({no_target}, kH200)), "'t': the p99 target must be a positive number");
  ModelNeeds no_points;
  no_points.name = "empty";
  no_points.p99_target_us = 100;
  EXPECT_CONTAINS(problems_of(search_plan({no_points}, kH200)), "'empty' has no measured point");
  EXPECT_CONTAINS(problems_of(search_plan({}, kH200)), "no models");
  EXPECT_CONTAINS(problems_of(search_plan({waves("a", 8, 10, 100)}, GpuShape{132, 0, 0})), "cannot be split");
  ModelNeeds zero = waves("zero", 8, 10, 100);
  for (CurvePoint& p : zero.curve) p.p99_us = 0;  // a failed measurement: never "meets"
  EXPECT_FALSE(search_plan({zero}, kH200).feasible);
}

TEST(PlanSearch, SpreadGivesTheLeftoverToTheLeastMargin) {
  const std::vector<ModelNeeds> models = {waves("A", 64, 100, 250), waves("B", 16, 50, 120)};
  SearchOptions spread;
  spread.spread = true;
  const SearchResult fewest = search_plan(models, kH200);
  const SearchResult r = search_plan(models, kH200, spread);
  ASSERT_TRUE(r.feasible);
  EXPECT_LT(r.worst_ratio, fewest.worst_ratio);
  EXPECT_LE(r.total_sms, kH200.capacity);
  EXPECT_GE(r.total_sms, fewest.total_sms);
}

TEST(PlanSearch, InterferenceSeenBesideTheOthersMovesTheModel) {
  std::vector<ModelNeeds> models = {waves("A", 64, 100, 250), waves("B", 16, 50, 120)};
  const SearchResult first = search_plan(models, kH200);
  ASSERT_EQ(sizes_of(first), (std::vector<unsigned>{32, 8}));
  // Beside the other, A's p99 was 260 us (alone 210): it missed; B met.
  EXPECT_TRUE(learn_interference(models, first.choices, {260, 100}, {3800, 9000}));
  EXPECT_NEAR(models[0].interference, 260.0 / 210.0 * 1.02, 1e-9);
  EXPECT_DOUBLE_EQ(models[1].interference, 1.0);
  const SearchResult next = search_plan(models, kH200);
  ASSERT_TRUE(next.feasible) << problems_of(next);
  EXPECT_EQ(sizes_of(next), (std::vector<unsigned>{64, 8}));  // one wave: 110 us alone, 136 predicted beside
  // Nothing missed: nothing changes.
  EXPECT_FALSE(learn_interference(models, next.choices, {140, 100}, {7000, 9000}));
}

TEST(PlanSearch, AMissWithinTheNoiseStillMovesTheModel) {
  std::vector<ModelNeeds> models = {waves("A", 64, 100, 250)};
  models[0].interference = 1.15;  // predicted 241.5 us on 32 SMs
  const SearchResult first = search_plan(models, kH200);
  ASSERT_EQ(sizes_of(first), (std::vector<unsigned>{32}));
  EXPECT_TRUE(learn_interference(models, first.choices, {251}, {3900}));  // 251/210 = 1.195 > 1.15
  EXPECT_GT(sizes_of(search_plan(models, kH200))[0], 32u);
  // Even a miss whose ratio is below what was learned must move it (no endless round).
  std::vector<ModelNeeds> again = {waves("A", 64, 100, 250)};
  again[0].interference = 1.19;
  const SearchResult at = search_plan(again, kH200);
  ASSERT_EQ(sizes_of(at), (std::vector<unsigned>{32}));
  EXPECT_TRUE(learn_interference(again, at.choices, {250.5}, {3900}));
  EXPECT_GT(sizes_of(search_plan(again, kH200))[0], 32u);
}

TEST(PlanSearch, CallsPerSecondMissedBesideTheOthersIsLearnedToo) {
  std::vector<ModelNeeds> models = {waves("A", 64, 100, 1000)};
  models[0].min_calls_per_s = 4000;
  const SearchResult first = search_plan(models, kH200);
  ASSERT_EQ(sizes_of(first), (std::vector<unsigned>{32}));
  EXPECT_TRUE(learn_interference(models, first.choices, {300}, {3500}));
  EXPECT_GT(sizes_of(search_plan(models, kH200))[0], 32u);
}

// Random curves, noisy and not monotone (as measured curves can be): the search's total is the
// exhaustive search's; where no plan meets every target, its worst ratio is the exhaustive one's.
TEST(PlanSearch, MatchesTheExhaustiveSearchOnRandomCurves) {
  trtet_test::RandomStream random(25);  // tests/common/random.h: the same curves on every standard library
  const GpuShape shapes[] = {kH200, kH200Of120, GpuShape{108, 4, 108}, GpuShape{64, 8, 48}};
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const GpuShape& gpu = shapes[trial % 4];
    const int count = 1 + trial % 4;
    std::vector<ModelNeeds> models;
    for (int i = 0; i < count; ++i) {
      const auto blocks = static_cast<unsigned>(random.uniform(4, 160));
      const double block_us = random.uniform_real(5, 200);
      ModelNeeds m = waves("m" + std::to_string(i), blocks, block_us, 0, gpu);
      for (CurvePoint& p : m.curve) p.p99_us *= random.uniform_real(0.85, 1.15);
      const CurvePoint& some = m.curve[random.next() % m.curve.size()];
      m.p99_target_us = some.p99_us * random.uniform_real(0.6, 3.0);
      if (trial % 7 == 0) m.min_calls_per_s = some.calls_per_s * 0.9;
      models.push_back(std::move(m));
    }
    const SearchResult fast = search_plan(models, gpu);
    bool completed = false;
    const SearchResult best = exhaustive_search(models, gpu, 0, &completed);
    ASSERT_TRUE(completed);
    ASSERT_EQ(fast.feasible, best.feasible) << "trial " << trial;
    if (!fast.problems.empty() && fast.choices.empty()) continue;  // e.g. more models than groups
    if (best.feasible) {
      ++feasible;
      // The bar is one granule; the search is exact.
      EXPECT_LE(fast.total_sms, best.total_sms + gpu.unit) << "trial " << trial;
      EXPECT_EQ(fast.total_sms, best.total_sms) << "trial " << trial;
    } else {
      ++infeasible;
      EXPECT_DOUBLE_EQ(fast.worst_ratio, best.worst_ratio) << "trial " << trial;
      EXPECT_FALSE(fast.problems.empty());
    }
    EXPECT_LE(fast.total_sms, gpu.capacity);
  }
  EXPECT_GT(feasible, 50);
  EXPECT_GT(infeasible, 50);
}

TEST(PlanSearch, IsFastForManyModels) {
  std::vector<ModelNeeds> models;
  for (int i = 0; i < 12; ++i) models.push_back(waves("m" + std::to_string(i), 16 + 8 * i, 20, 200 + 10 * i));
  const auto start = std::chrono::steady_clock::now();
  const SearchResult r = search_plan(models, GpuShape{1024, 8, 1024});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.feasible) << problems_of(r);
  EXPECT_LT(ms, 50.0);  // 12 models x 128 sizes; the exhaustive search would try 128^12 combinations
}

TEST(PlanSearch, ExhaustiveSearchStopsAtItsLimit) {
  const std::vector<ModelNeeds> models = {waves("A", 64, 100, 250), waves("B", 16, 50, 120), waves("C", 128, 20, 90)};
  bool completed = true;
  (void)exhaustive_search(models, kH200, 100, &completed);
  EXPECT_FALSE(completed);
}

}  // namespace
}  // namespace trtet_plan
