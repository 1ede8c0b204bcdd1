// CPU tests of plan sets (torch_tensorrt/executorch/PlanSet.h): a ladder written and read back,
// malformed and hostile input refused with the plan and field named, the set's rules (the same
// models in every plan, unique plan names, each plan within one split), a set made on another GPU
// refused, argument errors before any device, and an empty applied set.
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "green/contains.h"

namespace torch_tensorrt::executorch_backend {
namespace {

PlanGpu h200() {
  PlanGpu gpu;
  gpu.device = 0;  // as plan_gpu(0) reads it
  gpu.name = "NVIDIA H200";
  gpu.sm_count = 132;
  gpu.min_partition = 8;
  gpu.alignment = 8;
  gpu.granularity = 8;
  gpu.max_partitioned_sms = 120;
  return gpu;
}

// The latency model on 16, 24, 32 and 48 SMs, batch on 32, the rest for the others.
PlanSet ladder() {
  PlanSet set;
  set.gpu = h200();
  for (unsigned sms : {16u, 24u, 32u, 48u}) {
    SetPlan p;
    p.name = "latency-" + std::to_string(sms);
    p.partitions = {{"latency", sms, 250, 0, 0, 0, "latency.pte"}, {"batch", 32, 2000, 100, 0, 0, ""}};
    p.remainder_name = "others";
    set.plans.push_back(p);
  }
  return set;
}

std::string json_of(const PlanSet& set) {
  auto text = plan_set_json(set);
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message());
  return text.ok() ? *text : "";
}

constexpr ErrorCode kInvalid = ErrorCode::kInvalidArgument;
constexpr char kSet[] = "plan set: ";

// The ladder's JSON with the n-th occurrence (from 0) of `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to, int nth = 0) {
  std::string text = json_of(ladder());
  std::size_t at = text.find(from);
  for (int i = 0; i < nth && at != std::string::npos; ++i) at = text.find(from, at + 1);
  EXPECT_NE(at, std::string::npos) << from << " not in " << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PlanSet, WrittenAndReadBackUnchanged) {
  const std::string text = json_of(ladder());
  EXPECT_CONTAINS(text, "\"format\": \"trtet-plan-set\"");
  EXPECT_CONTAINS(text, "\"version\": 1");
  auto set = parse_plan_set(text);
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->plans.size(), 4u);
  EXPECT_EQ(set->gpu.name, "NVIDIA H200");
  EXPECT_EQ(set->plans[3].name, "latency-48");
  EXPECT_EQ(set->plans[3].partitions[0].sms, 48u);
  EXPECT_EQ(set->plans[3].partitions[0].program, "latency.pte");
  EXPECT_EQ(set->plans[0].remainder_name, "others");
  ASSERT_NE(set->find("latency-24"), nullptr);
  EXPECT_EQ(set->find("latency-24")->partitions[0].sms, 24u);
  EXPECT_EQ(set->find("latency-64"), nullptr);
  const DevicePlan one = set->device_plan(1);
  EXPECT_EQ(one.device, kAnyDevice);
  EXPECT_EQ(one.total_sms(), 56u);
  EXPECT_EQ(json_of(*set), text);
}

TEST(PlanSet, ItsRulesAreRefusedWithTheReason) {
  PlanSet set = ladder();
  set.plans[2].name = "latency-16";
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "two plans are named 'latency-16'");
  set = ladder();
  set.plans[1].partitions[1].name = "bulk";
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet,
                     "plan 'latency-24' does not name the models plan 'latency-16' names: every plan of a set names "
                     "the same models (missing: 'batch'; not in 'latency-16': 'bulk')");
  set = ladder();
  set.plans[3].remainder_name = "";
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "plan 'latency-48' does not name the models",
                     "missing: 'others'");
  // A model that is a partition in one plan and the remainder in another is the same model.
  set = ladder();
  set.plans[1].partitions[1].name = "others";
  set.plans[1].remainder_name = "batch";
  EXPECT_TRUE(plan_set_json(set).ok()) << plan_set_json(set).error().message();
  // A plan beyond one split: its partitions would overlap.
  set = ladder();
  set.plans[3].partitions[0].sms = 96;
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "plan 'latency-48': the partitions ask for 128 SMs in all");
  set = ladder();
  set.plans[0].partitions[0].sms = 12;
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "plan 'latency-16': partition 'latency' has 12 SMs");
  set = ladder();
  set.plans[0].name = "has space";
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "plans[0].name must be 1 to 64");
  set = ladder();
  set.plans.clear();
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "a plan set holds 1 to 16 plans, this one 0");
  set = ladder();
  while (set.plans.size() <= kMaxSetPlans) {
    set.plans.push_back(set.plans[0]);
    set.plans.back().name = "extra-" + std::to_string(set.plans.size());
  }
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, kSet, "this one 17");
}

TEST(PlanSet, MalformedAndHostileInputIsRefusedNamingTheField) {
  const struct {
    std::string text, refused_with;
  } cases[] = {
      {edited("\"trtet-plan-set\"", "\"trtet-partition-plan\""), "\"format\" must be \"trtet-plan-set\""},
      {edited("\"version\": 1", "\"version\": 2"), "version 2 of trtet-plan-set; this library reads version 1"},
      {edited("\"plans\": [", "\"extra\": 1, \"plans\": ["), "the plan set has an unknown key \"extra\""},
      {edited("\"name\": \"latency-24\"", "\"name\": \"latency-24\", \"sms\": 8"), "plans[1] has an unknown key \"sms\""},
      {edited("\"name\": \"latency-24\"", "\"name\": 24"), "plans[1].name must be a string"},
      {edited("\"name\": \"latency-24\"", "\"name\": \"latency-16\""), "two plans are named 'latency-16'"},
      {edited("\"sms\": 24", "\"sms\": -24"), "plans[1]: partitions[0].sms is -24"},
      {edited("\"sms\": 24", "\"sms\": 25"), "plan 'latency-24': partition 'latency' has 25 SMs; sizes are multiples of 8"},
      {edited("\"name\": \"batch\"", "\"name\": \"bulk\"", 2), "plan 'latency-32' does not name the models"},
      {edited("\"remainder\": \"others\"", "\"remainder\": 7"), "plans[0]: remainder must be a string"},
      {edited("\"sm_count\": 132", "\"sm_count\": 0"), "gpu.sm_count is 0"},
      {edited("\"sm_count\": 132", "\"sm_count\": 132, \"sm_count\": 132"), "the key \"sm_count\" appears twice"},
      {"{\"format\": \"trtet-plan-set\", \"version\": 1, \"gpu\": {}, \"plans\": []}", "gpu has no \"name\""},
      {"[]", "the plan set must be an object"},
      {"{\"format\": \"trtet-plan-set\",", "not valid JSON"},
      {std::string(9, '[') + std::string(9, ']'), "nested more than 8 deep"},
      {std::string((1 << 20) + 1, ' '), "a plan file is at most 1048576"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 200));
    TRTET_EXPECT_ERROR(parse_plan_set(c.text), kInvalid, kSet, c.refused_with);
  }
  // Plans are counted before any is read.
  std::string many = edited("\"plans\": [", "\"plans\": [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {},");
  TRTET_EXPECT_ERROR(parse_plan_set(many), kInvalid, kSet, "a plan set holds 1 to 16 plans, this one 18");
  TRTET_EXPECT_ERROR(parse_plan_set(edited("\"plans\": [", "\"plans\": 7, \"x\": [")), kInvalid, kSet,
                     "unknown key \"x\"");
}

TEST(PlanSet, ReadFromAFile) {
  const std::string path = ::testing::TempDir() + "plan_set_test_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << json_of(ladder());
  auto set = read_plan_set(path);
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->plans.size(), 4u);
  std::ofstream(path) << "{\"format\": 1}";
  TRTET_EXPECT_ERROR_SAYS(read_plan_set(path), path + ": plan set: ");
  std::remove(path.c_str());
  TRTET_EXPECT_ERROR(read_plan_set(path), kInvalid, "plan set: cannot open " + path);
}

TEST(PlanSet, CheckedAgainstTheGpu) {
  auto counts = check_plan_set(ladder(), h200());
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  EXPECT_EQ(*counts, (std::vector<std::vector<unsigned>>{{16, 32}, {24, 32}, {32, 32}, {48, 32}}));
  // Made on another GPU: refused naming the first plan and both GPUs.
  PlanGpu other = h200();
  other.name = "NVIDIA H100 PCIe";
  other.sm_count = 114;
  other.max_partitioned_sms = 112;
  auto refused = check_plan_set(ladder(), other);
  TRTET_EXPECT_ERROR(refused, kInvalid, "plan set: plan 'latency-16': it was made on 'NVIDIA H200'",
                     "but this GPU is 'NVIDIA H100 PCIe'", "make a plan on this GPU");
  EXPECT_EQ(refused.error().limits().sm_count, 114u);
  // The same kind, but a split that hands out fewer SMs: the largest plan is refused.
  PlanSet big = ladder();
  big.plans[3].partitions[0].sms = 88;
  PlanGpu smaller = h200();
  smaller.max_partitioned_sms = 112;
  TRTET_EXPECT_ERROR(check_plan_set(big, smaller), kInvalid, "plan set: plan 'latency-48': the partitions ask for 120 SMs");
}

TEST(PlanSet, ApplyingChecksTheSetBeforeTheDevice) {
  PlanSet bad = ladder();
  bad.plans[1].name = bad.plans[0].name;
  TRTET_EXPECT_ERROR(apply_plan_set(bad, 0), kInvalid, kSet, "two plans are named 'latency-16'");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  (void)cudaGetLastError();
  if (count == 0) {  // no GPU: the device is refused after the set is found valid
    TRTET_EXPECT_ERROR(apply_plan_set(ladder(), 0), ErrorCode::kNoDevice, "");
  }
}

TEST(PlanSet, AnEmptyAppliedSetOwnsNothing) {
  PlanSetPartitions none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none.device(), -1);
  EXPECT_TRUE(none.plans().empty());
  EXPECT_TRUE(none.models().empty());
  EXPECT_EQ(none.current(), "");
  TRTET_EXPECT_ERROR(none.stream("latency"), ErrorCode::kInvalidState, "stream on an empty PlanSetPartitions");
  TRTET_EXPECT_ERROR(none.switch_to("latency-16"), ErrorCode::kInvalidState, "switch_to on an empty");
  TRTET_EXPECT_ERROR(none.partition("latency-16", "latency"), ErrorCode::kInvalidState, "partition on an empty");
  PlanSetPartitions moved(std::move(none));
  EXPECT_FALSE(moved);
}

// The ladder with each model's curve on each plan: more SMs, a lower p99 and a longer curve.
PlanSet ladder_with_curves() {
  PlanSet set = ladder();
  for (SetPlan& p : set.plans) {
    const double sms = p.partitions[0].sms;
    p.curves = {{"latency", {{100, 4000 / sms}, {1000, 8000 / sms}, {100 * sms, 20000 / sms}}},
                {"batch", {{10, 900}, {200, 1400}}},
                {"others", {{10, 500}}}};
  }
  return set;
}

TEST(PlanSetCurves, WrittenAndReadBackAsTheControllersLadder) {
  auto text = plan_set_json(ladder_with_curves());
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_CONTAINS(*text, "\"curves\"");
  EXPECT_CONTAINS(*text, "\"rate_per_s\"");
  auto set = parse_plan_set(*text);
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->plans[3].curves.size(), 3u);
  EXPECT_EQ(set->plans[3].curves[0].model, "batch");  // written as an object: keys come back sorted
  auto made = plan_set_ladder(*set);
  ASSERT_TRUE(made.ok()) << made.error().message();
  ASSERT_EQ(made->size(), 4u);
  EXPECT_EQ(made->device_sms(), 132u);
  const std::size_t latency = *made->find_model("latency");
  const std::size_t others = *made->find_model("others");
  // The remainder's SMs are what the partitions leave: 132 - 48 - 32 on the last plan.
  EXPECT_EQ(made->plan(3).models[others].sms, 52u);
  EXPECT_EQ(made->plan(0).models[latency].sms, 16u);
  // 48 SMs at 1000 calls/s predict 8000/48 µs; beyond the last point, infeasible.
  EXPECT_NEAR(*made->predict(3, latency, 1000), 8000.0 / 48, 1e-9);
  EXPECT_FALSE(made->predict(0, latency, 100 * 16 + 1).has_value());
  // A set written without curves has none, and no ladder.
  auto bare = plan_set_ladder(ladder());
  ASSERT_FALSE(bare.ok());
  TRTET_EXPECT_ERROR(bare, kInvalid, "plan set: plan 'latency-16' has no curve for 'latency'");
}

TEST(PlanSetCurves, BadCurvesAreRefusedWithThePlanAndModel) {
  const std::string good = json_of(ladder_with_curves());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return parse_plan_set(text);
  };
  TRTET_EXPECT_ERROR(with("\"batch\": [", "\"nobody\": ["), kInvalid, "has a curve for 'nobody', which it does not name");
  TRTET_EXPECT_ERROR(with("\"rate_per_s\": 200.0", "\"rate_per_s\": 5.0"), kInvalid, "plans[0].curves.batch: rates must rise");
  TRTET_EXPECT_ERROR(with("\"p99_us\": 900.0", "\"p99_us\": -1"), kInvalid, "plans[0].curves.batch[0].p99_us must be a number");
  TRTET_EXPECT_ERROR(with("\"curves\": {", "\"curves\": 7, \"x\": {"), kInvalid, "has an unknown key \"x\"");
  TRTET_EXPECT_ERROR(parse_plan_set(edited("\"remainder\": \"others\"", "\"remainder\": \"others\", \"curves\": 7")), kInvalid,
                     "plans[0].curves must be an object");
  TRTET_EXPECT_ERROR(with("\"p99_us\": 900.0", "\"p99_us\": 900.0, \"extra\": 1"), kInvalid, "has an unknown key \"extra\"");
  // A curve longer than the limit is refused before its points are read.
  std::string points = "[";
  for (std::size_t i = 0; i <= kMaxCurvePoints; ++i) points += (i ? ", " : "") + std::string("{\"rate_per_s\": ") + std::to_string(i + 1) + ", \"p99_us\": 1}";
  points += "]";
  std::string text = good;
  const std::size_t at = text.find("\"others\": [");
  ASSERT_NE(at, std::string::npos);
  const std::size_t end = text.find(']', at);
  text.replace(at, end - at + 1, "\"others\": " + points);
  TRTET_EXPECT_ERROR(parse_plan_set(text), kInvalid, "plans[0].curves.others must be an array of 1 to 64 points");
  // The same rules hold for a set built in code.
  PlanSet set = ladder_with_curves();
  set.plans[1].curves.push_back(set.plans[1].curves[0]);
  TRTET_EXPECT_ERROR(plan_set_json(set), kInvalid, "plan 'latency-24' has two curves for 'latency'");
  set = ladder_with_curves();
  set.plans[2].curves[0].points[1].rate_per_s = 50;
  TRTET_EXPECT_ERROR(plan_set_ladder(set), kInvalid, "plan 'latency-32': the curve of 'latency' needs finite, non-negative values and rising rates");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
