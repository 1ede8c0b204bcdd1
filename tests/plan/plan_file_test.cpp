// CPU tests of the partition-plan file (torch_tensorrt/executorch/PartitionPlan.h): a plan written
// and read back, malformed and hostile input refused with the field named (every size checked),
// and a plan made on another GPU refused with the reason, before any device is touched; plans for
// any device and plans naming their devices, and the version-1 files of both kinds still read.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "common/error_match.h"
#include "green/contains.h"

namespace torch_tensorrt::executorch_backend {
namespace {

PlanGpu h200(unsigned max_partitioned = 128) {
  PlanGpu gpu;
  gpu.device = 0;  // as plan_gpu(0) reads it
  gpu.name = "NVIDIA H200";
  gpu.sm_count = 132;
  gpu.min_partition = 8;
  gpu.alignment = 8;
  gpu.granularity = 8;
  gpu.max_partitioned_sms = max_partitioned;
  return gpu;
}

DevicePlan three_models() {
  DevicePlan plan;  // for any device
  plan.gpu = h200();
  plan.partitions = {{"latency", 16, 200, 0, 150.5, 160.25, "latency.pte"},
                     {"memory", 24, 400, 1000, 300, 350, "memory.pte"},
                     {"compute", 32, 250, 0, 210, 212, "compute.pte"}};
  plan.remainder_name = "headroom";
  return plan;
}

std::string json_of(const PartitionPlan& plan) {
  auto text = partition_plan_json(plan);
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message());
  return text.ok() ? *text : "";
}

std::string json_of(const DevicePlan& plan) {
  auto text = partition_plan_json(PartitionPlan::of(plan));
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message());
  return text.ok() ? *text : "";
}

// Every refusal of a plan's text: this code, a message that starts its reason after this.
constexpr GreenContextErrc kInvalid = GreenContextErrc::kInvalidArgument;
constexpr char kPlan[] = "partition plan: ";

// A valid plan's JSON with `from` replaced by `to` (which must occur).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = json_of(three_models());
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// One hostile edit of a valid plan and the words its refusal must contain.
struct Edit {
  std::string from, to, refused_with;
};

// Each edit applied alone to a valid plan is refused with its words.
void expect_refused(std::initializer_list<Edit> edits) {
  for (const Edit& edit : edits) {
    SCOPED_TRACE(edit.from + " -> " + edit.to.substr(0, 80));
    TRTET_EXPECT_ERROR(parse_partition_plan(edited(edit.from, edit.to)), kInvalid, kPlan, edit.refused_with);
  }
}

// The one entry of a plan for any device.
const DevicePlan& only(const PartitionPlan& plan) {
  EXPECT_TRUE(plan.any_device());
  return plan.devices.at(0);
}

// Checked against one GPU: that GPU's SM counts.
Result<std::vector<unsigned>> check_on(const DevicePlan& plan, const PlanGpu& gpu) {
  auto counts = check_partition_plan(PartitionPlan::of(plan), {gpu});
  if (!counts.ok()) return counts.error();
  return counts->at(0);
}

TEST(PlanFile, WrittenAndReadBackUnchanged) {
  const DevicePlan plan = three_models();
  const std::string text = json_of(plan);
  EXPECT_CONTAINS(text, "\"format\": \"trtet-partition-plan\"");
  EXPECT_CONTAINS(text, "\"version\": 2");
  EXPECT_EQ(text.find("\"device\""), std::string::npos) << "a plan for any device names none";
  auto read = parse_partition_plan(text);
  ASSERT_TRUE(read.ok()) << read.error().message();
  const DevicePlan* back = &only(*read);
  EXPECT_EQ(back->gpu.name, "NVIDIA H200");
  EXPECT_EQ(back->gpu.max_partitioned_sms, 128u);
  ASSERT_EQ(back->partitions.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->partitions[i].name, plan.partitions[i].name);
    EXPECT_EQ(back->partitions[i].sms, plan.partitions[i].sms);
    EXPECT_DOUBLE_EQ(back->partitions[i].p99_target_us, plan.partitions[i].p99_target_us);
    EXPECT_DOUBLE_EQ(back->partitions[i].min_calls_per_s, plan.partitions[i].min_calls_per_s);
    EXPECT_DOUBLE_EQ(back->partitions[i].p99_alone_us, plan.partitions[i].p99_alone_us);
    EXPECT_DOUBLE_EQ(back->partitions[i].p99_beside_us, plan.partitions[i].p99_beside_us);
    EXPECT_EQ(back->partitions[i].program, plan.partitions[i].program);
  }
  EXPECT_EQ(back->remainder_name, "headroom");
  EXPECT_EQ(back->total_sms(), 72u);
  EXPECT_EQ(json_of(*read), text);
}

TEST(PlanFile, OptionalFieldsAndANullRemainder) {
  const std::string minimal = R"({"format": "trtet-partition-plan", "version": 1,
    "gpu": {"name": "NVIDIA H200", "sm_count": 132, "min_partition": 8, "alignment": 8, "granularity": 8,
            "max_partitioned_sms": 128},
    "partitions": [{"name": "only", "sms": 128, "p99_target_us": 100}], "remainder": null})";
  auto read = parse_partition_plan(minimal);  // version 1, one device: read as a plan for any device
  ASSERT_TRUE(read.ok()) << read.error().message();
  const DevicePlan& plan = only(*read);
  EXPECT_TRUE(plan.remainder_name.empty());
  EXPECT_EQ(plan.partitions[0].program, "");
  EXPECT_EQ(plan.partitions[0].p99_alone_us, 0);
  // Written back in the current format, which reads back the same.
  auto again = parse_partition_plan(json_of(*read));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(json_of(*again), json_of(*read));
}

TEST(PlanFile, MalformedJsonIsRefused) {
  TRTET_EXPECT_ERROR(parse_partition_plan(""), kInvalid, kPlan, "not valid JSON");
  TRTET_EXPECT_ERROR(parse_partition_plan("{"), kInvalid, kPlan, "not valid JSON");
  TRTET_EXPECT_ERROR(parse_partition_plan("{\"format\": \"trtet-partition-plan\",}"), kInvalid, kPlan,
                     "not valid JSON");
  TRTET_EXPECT_ERROR(parse_partition_plan(std::string("{\"a\":\0}", 7)), kInvalid, kPlan, "not valid JSON");
  TRTET_EXPECT_ERROR(parse_partition_plan("[]"), kInvalid, kPlan, "the plan must be an object");
  TRTET_EXPECT_ERROR(parse_partition_plan("42"), kInvalid, kPlan, "the plan must be an object");
  TRTET_EXPECT_ERROR(parse_partition_plan("{}"), kInvalid, kPlan, "the plan has no \"format\"");
  expect_refused({
      {"trtet-partition-plan", "something-else", "\"format\" must be \"trtet-partition-plan\""},
      {"\"version\": 2", "\"version\": 3", "version 3 of trtet-partition-plan; this library reads versions 1 to 2"},
      {"\"version\": 2", "\"version\": \"2\"", "version must be a whole number"},
      {"\"version\": 2", "\"version\": 1", "the plan has no \"gpu\""},  // version 1's keys
  });
}

TEST(PlanFile, UnknownAndRepeatedKeysAreRefused) {
  expect_refused({
      {"\"version\": 2", "\"version\": 2, \"extra\": 0", "unknown key \"extra\""},
      {"\"gpu\": {", "\"gpo\": 1, \"gpu\": {", "devices[0] has an unknown key \"gpo\""},
      {"\"sms\": 16", "\"sms\": 16, \"smz\": 16", "partitions[0] has an unknown key \"smz\""},
      {"\"sms\": 16", "\"sms\": 16, \"sms\": 128", "the key \"sms\" appears twice"},
      {"\"version\": 2", "\"version\": 2, \"version\": 2", "\"version\" appears twice"},
      {"\"sm_count\": 132", "\"sm_count\": 132, \"cores\": 1", "gpu has an unknown key"},
      {"\"name\": \"latency\"", "\"nome\": \"latency\"", "partitions[0] has no \"name\""},
      {"\"max_partitioned_sms\": 128", "\"x\": 128", "gpu has no \"max_partitioned_sms\""},
  });
}

TEST(PlanFile, EverySizeIsChecked) {
  // Partition sizes: whole numbers, multiples of the granularity, within one split.
  expect_refused({
      {"\"sms\": 16", "\"sms\": 12", "partition 'latency' has 12 SMs; sizes are multiples of 8"},
      {"\"sms\": 16", "\"sms\": 0", "has 0 SMs"},
      {"\"sms\": 16", "\"sms\": -16", "partitions[0].sms is -16"},
      {"\"sms\": 16", "\"sms\": 16.5", "partitions[0].sms must be a whole number"},
      {"\"sms\": 16", "\"sms\": 1e3", "must be a whole number"},
      {"\"sms\": 16", "\"sms\": \"16\"", "must be a whole number"},
      {"\"sms\": 16", "\"sms\": 18446744073709551615", "at most 65536"},
      {"\"sms\": 16", "\"sms\": 99999999999999999999999", "must be a whole number"},
      {"\"sms\": 16", "\"sms\": 136", "sizes are multiples of 8 from 8 to 128"},
      {"\"sms\": 16", "\"sms\": 80", "ask for 136 SMs in all (80,24,32)"},
      // The GPU's fields.
      {"\"sm_count\": 132", "\"sm_count\": 0", "gpu.sm_count is 0"},
      {"\"sm_count\": 132", "\"sm_count\": 70000", "gpu.sm_count is 70000"},
      {"\"granularity\": 8", "\"granularity\": 4", "gpu.granularity is 4"},
      {"\"max_partitioned_sms\": 128", "\"max_partitioned_sms\": 136", "gpu.max_partitioned_sms is 136"},
      {"\"max_partitioned_sms\": 128", "\"max_partitioned_sms\": 100", "must be a multiple of the granularity"},
      {"\"max_partitioned_sms\": 128", "\"max_partitioned_sms\": 64", "ask for 72 SMs in all"},
      // Times and rates: finite, >= 0, targets > 0.
      {"\"p99_target_us\": 200.0", "\"p99_target_us\": 0", "p99_target_us must be a number in (0"},
      {"\"p99_target_us\": 200.0", "\"p99_target_us\": -5", "must be a number in [0, 1e12]"},
      {"\"p99_target_us\": 200.0", "\"p99_target_us\": 1e300", "must be a number in [0, 1e12]"},
      {"\"p99_target_us\": 200.0", "\"p99_target_us\": 1e999", "not valid JSON"},
      {"\"p99_target_us\": 200.0", "\"p99_target_us\": null", "must be a number"},
      {"\"min_calls_per_s\": 1000.0", "\"min_calls_per_s\": -1", "min_calls_per_s must be"},
  });
}

TEST(PlanFile, NamesAreCheckedAndUnique) {
  expect_refused({
      {"\"latency\"", "\"\"", "partitions[0].name must be 1 to 64"},
      {"\"latency\"", "\"" + std::string(65, 'a') + "\"", "partitions[0].name is longer than 64"},
      {"\"latency\"", "\"has space\"", "partitions[0].name must be 1 to 64"},
      {"\"latency\"", "\"caf\\u00e9\"", "partitions[0].name must be 1 to 64"},
      {"\"latency\"", "\"a\\u0000b\"", "control characters"},
      {"\"latency\"", "\"memory\"", "two partitions are named 'memory'"},
      {"\"headroom\"", "\"compute\"", "the remainder is named 'compute', like a partition"},
      {"\"headroom\"", "\"\"", "remainder must be null or a name"},
      {"\"headroom\"", "7", "remainder must be a string"},
      {"\"NVIDIA H200\"", "\"\"", "gpu.name must be 1 to 256"},
      {"\"NVIDIA H200\"", "\"NVIDIA\\nH200\"", "gpu.name has control characters"},
      {"\"latency.pte\"", "\"" + std::string(5000, 'p') + "\"", "longer than 4096 bytes"},
  });
}

TEST(PlanFile, HostileShapesAreRefusedBeforeParsing) {
  // Nesting: 9 levels refused without handing it to the parser; 100000 would be a stack overflow.
  TRTET_EXPECT_ERROR(parse_partition_plan(std::string(9, '[') + std::string(9, ']')), kInvalid, kPlan,
                     "nested more than 8 deep");
  TRTET_EXPECT_ERROR(parse_partition_plan(std::string(100000, '[')), kInvalid, kPlan, "nested more than 8 deep");
  // Brackets inside strings do not count.
  EXPECT_TRUE(parse_partition_plan(edited("\"latency.pte\"", "\"" + std::string(20, '[') + "\\\"\"")).ok());
  // Size: more than 1 MiB refused at once.
  TRTET_EXPECT_ERROR(parse_partition_plan(std::string((1 << 20) + 1, ' ')), kInvalid, kPlan,
                     "a plan file is at most 1048576");
  // Partitions: at most 256.
  std::string many = R"({"format": "trtet-partition-plan", "version": 1, "gpu": {"name": "big", "sm_count": 65536,
    "min_partition": 1, "alignment": 1, "granularity": 1, "max_partitioned_sms": 65536}, "partitions": [)";
  for (int i = 0; i < 257; ++i) many += std::string(i ? "," : "") + "{\"name\": \"m" + std::to_string(i) + "\", \"sms\": 1, \"p99_target_us\": 1}";
  many += "]}";
  TRTET_EXPECT_ERROR(parse_partition_plan(many), kInvalid, kPlan, "a plan has 1 to 256 partitions, this one 257");
  TRTET_EXPECT_ERROR(parse_partition_plan(edited("\"partitions\": [", "\"partitions\": [], \"x\": [")), kInvalid, kPlan,
                     "unknown key");
}

TEST(PlanFile, AnInvalidPlanIsNotWritten) {
  DevicePlan plan = three_models();
  plan.partitions[0].sms = 12;
  auto text = partition_plan_json(PartitionPlan::of(plan));
  ASSERT_FALSE(text.ok());
  TRTET_EXPECT_ERROR_SAYS(text, "partition 'latency' has 12 SMs");
  plan = three_models();
  plan.partitions.clear();
  EXPECT_FALSE(partition_plan_json(PartitionPlan::of(plan)).ok());
  EXPECT_FALSE(partition_plan_json(PartitionPlan{}).ok());
}

TEST(PlanFile, TheSameGpuGetsTheSplit) {
  auto counts = check_on(three_models(), h200());
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  EXPECT_EQ(*counts, (std::vector<unsigned>{16, 24, 32}));
  // A GPU of the same kind whose split hands out more (or fewer, while the plan fits) is fine.
  EXPECT_TRUE(check_on(three_models(), h200(120)).ok());
}

TEST(PlanFile, AnotherGpuShapeIsRefusedWithTheReason) {
  PlanGpu other = h200();
  other.name = "NVIDIA H100 PCIe";
  other.sm_count = 114;
  other.max_partitioned_sms = 112;
  auto counts = check_on(three_models(), other);
  ASSERT_FALSE(counts.ok());
  TRTET_EXPECT_ERROR(
      counts, GreenContextErrc::kInvalidArgument,
      "it was made on 'NVIDIA H200' (132 SMs; partitions are multiples of 8 SMs: minimum 8, alignment 8; "
      "one split hands out at most 128)",
      "but this GPU is 'NVIDIA H100 PCIe' (114 SMs;", "make a plan on this GPU");
  EXPECT_EQ(counts.error().limits().sm_count, 114u);

  PlanGpu finer = h200();
  finer.min_partition = 2;
  finer.alignment = 2;
  finer.granularity = 2;
  TRTET_EXPECT_ERROR_SAYS(check_on(three_models(), finer), "minimum 2, alignment 2");
  PlanGpu renamed = h200();
  renamed.name = "NVIDIA H100 80GB HBM3";  // the same SM layout, another GPU: its latencies differ
  EXPECT_FALSE(check_on(three_models(), renamed).ok());
}

TEST(PlanFile, APlanLargerThanThisGpusSplitIsRefusedWithTheClosestValidRequest) {
  DevicePlan plan = three_models();
  plan.partitions = {{"a", 64, 100, 0, 0, 0, ""}, {"b", 64, 100, 0, 0, 0, ""}};
  auto counts = check_on(plan, h200(120));  // an H200 whose split makes 15 groups
  ASSERT_FALSE(counts.ok());
  TRTET_EXPECT_ERROR_SAYS(counts,
                          "the partitions ask for 128 SMs in all (64,64); one split handed out 128 on the GPU the plan "
                          "was made on, but only 120 on this one",
                          "closest valid request: 56,64");
  EXPECT_EQ(counts.error().closest_valid(), (std::vector<unsigned>{56, 64}));
  EXPECT_EQ(counts.error().limits().max_partitioned_sms, 120u);
  EXPECT_EQ(counts.error().limits().device, 0);
}

TEST(PlanFile, ApplyingChecksThePlanBeforeTheDevice) {
  DevicePlan bad = three_models();
  bad.partitions[1].sms = 7;
  auto applied = apply_partition_plan(PartitionPlan::of(bad), 0);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().code(), GreenContextErrc::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(applied, "partition 'memory' has 7 SMs");
  // A plan for any device needs the device it is applied on.
  TRTET_EXPECT_ERROR(apply_partition_plan(PartitionPlan::of(three_models())), GreenContextErrc::kInvalidArgument,
                     "the plan is for any device and names none: give the device");
}

TEST(PlanFile, PartitionsAreFoundByName) {
  PlannedPartitions none;
  auto missing = none.get("chat");
  ASSERT_FALSE(missing.ok());
  TRTET_EXPECT_ERROR_SAYS(missing, "no partition named 'chat' in the plan; it has none");
  std::vector<GreenContext> empty(2);
  PlannedPartitions two({3, 3}, {"chat", "headroom"}, std::move(empty));
  EXPECT_EQ(two.devices(), (std::vector<int>{3}));
  ASSERT_TRUE(two.get(3, "chat").ok());
  TRTET_EXPECT_ERROR_SAYS(two.get(0, "chat"), "the plan split no GPU 0; it split GPU 3");
  ASSERT_TRUE(two.get("headroom").ok());
  EXPECT_EQ(*two.get("headroom"), &two.partitions()[1]);
  ASSERT_TRUE(two.get("chat").ok());
  TRTET_EXPECT_ERROR_SAYS(two.get("vision"), "no partition named 'vision' in the plan on GPU 3; it has 'chat', 'headroom'");
  // Taken out, the partitions leave no names behind.
  const std::vector<GreenContext> taken = std::move(two).release();
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_TRUE(two.names().empty());  // NOLINT(bugprone-use-after-move): release() leaves it empty
  EXPECT_TRUE(two.partitions().empty());
  TRTET_EXPECT_ERROR_SAYS(two.get("chat"), "it has none");
}

TEST(PlanFile, ReadFromAFile) {
  const std::string path = ::testing::TempDir() + "plan_file_test.json";
  {
    std::ofstream out(path);
    out << json_of(three_models());
  }
  auto plan = read_partition_plan(path);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(only(*plan).partitions.size(), 3u);
  {
    std::ofstream out(path);
    out << "{\"format\": 1}";
  }
  auto bad = read_partition_plan(path);
  ASSERT_FALSE(bad.ok());
  TRTET_EXPECT_ERROR_SAYS(bad, path + ": partition plan:");
  {
    std::ofstream out(path);
    out << std::string((1 << 20) + 10, ' ');
  }
  TRTET_EXPECT_ERROR_SAYS(read_partition_plan(path), "larger than 1048576 bytes");
  std::remove(path.c_str());
  TRTET_EXPECT_ERROR_SAYS(read_partition_plan(path), "cannot open");
  TRTET_EXPECT_ERROR_SAYS(read_partition_plan("/"), "partition plan: ");
}

// ---- several GPUs: one plan naming each device ----

PartitionPlan two_devices() {
  DevicePlan first = three_models();
  first.device = 0;
  DevicePlan second = three_models();
  second.device = 1;
  second.partitions = {{"vision", 32, 900, 0, 0, 0, "vision.pte"}, {"latency", 8, 200, 0, 0, 0, ""}};
  second.remainder_name = "";
  PartitionPlan plan;
  plan.devices = {first, second};
  return plan;
}

// The two-device plan's JSON with the n-th occurrence (from 0) of `from` replaced by `to`.
std::string plans_edited(const std::string& from, const std::string& to, int nth = 0,
                         const std::string& original = "") {
  std::string text = original.empty() ? json_of(two_devices()) : original;
  std::size_t at = text.find(from);
  for (int i = 0; i < nth && at != std::string::npos; ++i) at = text.find(from, at + 1);
  EXPECT_NE(at, std::string::npos) << from << " not in " << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Version 1's several-GPU file ("trtet-partition-plans"), as users have them: each device's entry a
// version-1 one-device plan.
std::string v1_plans_json(const PartitionPlan& plan) {
  std::string text = "{\"format\": \"trtet-partition-plans\", \"version\": 1, \"devices\": [";
  for (std::size_t i = 0; i < plan.devices.size(); ++i) {
    DevicePlan one = plan.devices[i];
    const int device = one.device;
    one.device = kAnyDevice;
    // The current format's entry, turned back into version 1's one-device object.
    std::string entry = json_of(one);
    const std::string devices_key = "\"devices\": [";
    const auto open = entry.find(devices_key);
    const auto close = entry.rfind(']');
    std::string body = entry.substr(open + devices_key.size(), close - open - devices_key.size());
    const auto brace = body.find('{');
    body.insert(brace + 1, "\"format\": \"trtet-partition-plan\", \"version\": 1, ");
    text += std::string(i ? ", " : "") + "{\"device\": " + std::to_string(device) + ", \"plan\": " + body + "}";
  }
  return text + "]}";
}

TEST(PlansFile, WrittenAndReadBackUnchanged) {
  const std::string text = json_of(two_devices());
  EXPECT_CONTAINS(text, "\"format\": \"trtet-partition-plan\"");
  EXPECT_CONTAINS(text, "\"device\": 1");
  auto plan = parse_partition_plan(text);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_FALSE(plan->any_device());
  EXPECT_EQ(plan->device_indices(), (std::vector<int>{0, 1}));
  ASSERT_NE(plan->find(1), nullptr);
  EXPECT_EQ(plan->find(1)->partitions[0].name, "vision");
  EXPECT_EQ(plan->find(0)->remainder_name, "headroom");
  EXPECT_EQ(plan->find(2), nullptr);
  EXPECT_EQ(json_of(*plan), text);
}

TEST(PlansFile, Version1SeveralGpuFilesAreRead) {
  const std::string v1 = v1_plans_json(two_devices());
  auto plan = parse_partition_plan(v1);
  ASSERT_TRUE(plan.ok()) << plan.error().message() << "\n" << v1;
  EXPECT_EQ(plan->device_indices(), (std::vector<int>{0, 1}));
  EXPECT_EQ(json_of(*plan), json_of(two_devices()));  // written in the current format
  const struct {
    std::string text, refused_with;
  } cases[] = {
      {plans_edited("\"version\": 1", "\"version\": 2", 0, v1), "version 2 of trtet-partition-plans; this library "
                                                                 "reads version 1"},
      {plans_edited("\"devices\": [", "\"gpus\": 2, \"devices\": [", 0, v1), "the file has an unknown key \"gpus\""},
      {plans_edited("\"device\": 1,", "\"device\": 1, \"sms\": 8,", 0, v1), "devices[1] has an unknown key \"sms\""},
      {plans_edited("\"device\": 1,", "\"device\": 0,", 0, v1), "device 0 has two plans"},
      {plans_edited("\"device\": 1,", "\"device\": 64,", 0, v1), "devices[1].device is 64; it must be 0 to 63"},
      {plans_edited("\"sms\": 32", "\"sms\": 30", 1, v1),
       "devices[1] (device 1).plan: partition 'vision' has 30 SMs; sizes are multiples of 8"},
      {plans_edited("\"trtet-partition-plan\"", "\"trtet-plan\"", 1, v1),
       "devices[1] (device 1).plan: \"format\" must be \"trtet-partition-plan\""},
      {"{\"format\": \"trtet-partition-plans\", \"version\": 1, \"devices\": [{\"device\": 0}]}",
       "devices[0] has no \"plan\""},
      {"{\"format\": \"trtet-partition-plans\", \"version\": 1, \"devices\": [{\"device\": 0, \"plan\": 7}]}",
       "devices[0] (device 0).plan: the plan must be an object"},
      {"{\"format\": \"trtet-partition-plans\", \"version\": 1, \"devices\": []}", "names 1 to 64 devices, this one 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 200));
    TRTET_EXPECT_ERROR(parse_partition_plan(c.text), kInvalid, kPlan, c.refused_with);
  }
}

TEST(PlansFile, MalformedAndHostileInputIsRefusedNamingTheField) {
  const struct {
    std::string text, refused_with;
  } cases[] = {
      {plans_edited("\"trtet-partition-plan\"", "\"trtet-partition-planz\""),
       "\"format\" must be \"trtet-partition-plan\" (or version 1's several-GPU \"trtet-partition-plans\")"},
      {plans_edited("\"devices\": [", "\"gpus\": 2, \"devices\": ["), "the plan has an unknown key \"gpus\""},
      {plans_edited("\"device\": 1,", "\"device\": 1, \"sms\": 8,"), "devices[1] has an unknown key \"sms\""},
      {plans_edited("\"device\": 1,", "\"device\": 0,"), "device 0 has two plans"},
      {plans_edited("\"device\": 0,", "\"device\": 2,"), "devices[1] is device 1 after device 2: devices are listed in "
                                                        "ascending order"},
      {plans_edited("\"device\": 1,", "\"device\": -1,"), "devices[1].device is -1; it must be 0 to 65536"},
      {plans_edited("\"device\": 1,", "\"device\": 64,"), "devices[1].device is 64; it must be 0 to 63"},
      {plans_edited("\"device\": 1,", "\"device\": 99999999999,"), "devices[1].device is 99999999999; at most 65536"},
      {plans_edited("\"device\": 1,", "\"device\": \"1\","), "devices[1].device must be a whole number"},
      {plans_edited("\"device\": 1,", "\"device\": 1.0,"), "devices[1].device must be a whole number"},
      {plans_edited("\"device\": 1,", "\"device\": 1, \"device\": 1,"), "the key \"device\" appears twice"},
      {plans_edited("\"device\": 1,", "\"device\": null,"), "devices[1] names no device; only a plan of one entry"},
      {plans_edited("\"sms\": 32", "\"sms\": 30", 1),  // device 1's vision (device 0's compute is the first)
       "devices[1] (device 1): partition 'vision' has 30 SMs; sizes are multiples of 8"},
      {plans_edited("\"remainder\": null", "\"remainder\": null, \"extra\": 1"),
       "devices[1] has an unknown key \"extra\""},
      {plans_edited("\"name\": \"vision\"", "\"name\": \"latency\""), "devices[1] (device 1): two partitions are "
                                                                     "named 'latency'"},
      {"{\"format\": \"trtet-partition-plan\", \"version\": 2, \"devices\": []}", "names 1 to 64 devices, this one 0"},
      {"{\"format\": \"trtet-partition-plan\", \"version\": 2, \"devices\": {}}", "\"devices\" must be an array"},
      {"{\"format\": \"trtet-partition-plan\", \"version\": 2, \"devices\": [{\"device\": 0}]}",
       "devices[0] has no \"gpu\""},
      {"{\"format\": \"trtet-partition-plan\", \"version\": 2, \"devices\": [7]}", "devices[0] must be an object"},
      {"{\"version\": 1}", "the plan has no \"format\""},
      {"[1, 2]", "the plan must be an object"},
      {"{\"format\": \"trtet-partition-plan\", ", "not valid JSON"},
      {std::string(20, '[') + std::string(20, ']'), "nested more than 8 deep"},
      {std::string((1 << 20) + 1, ' '), "a plan file is at most 1048576"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 200));
    TRTET_EXPECT_ERROR(parse_partition_plan(c.text), kInvalid, kPlan, c.refused_with);
  }
  // 65 devices: more than a file may name (counted before any is read).
  std::string many = "{\"format\": \"trtet-partition-plan\", \"version\": 2, \"devices\": [";
  for (int d = 0; d < 65; ++d) many += std::string(d ? "," : "") + "{\"device\": " + std::to_string(d) + "}";
  many += "]}";
  TRTET_EXPECT_ERROR(parse_partition_plan(many), kInvalid, kPlan, "names 1 to 64 devices, this one 65");
  // An invalid plan is not written.
  PartitionPlan bad = two_devices();
  bad.devices[1].device = 0;
  TRTET_EXPECT_ERROR_SAYS(partition_plan_json(bad), "device 0 has two plans");
  bad = two_devices();
  bad.devices[1].partitions[0].sms = 12;
  TRTET_EXPECT_ERROR_SAYS(partition_plan_json(bad), "devices[1] (device 1): partition 'vision' has 12 SMs");
  bad = two_devices();
  bad.devices[1].device = kAnyDevice;
  TRTET_EXPECT_ERROR_SAYS(partition_plan_json(bad), "names no device; only a plan of one entry may be for any device");
}

TEST(PlansFile, MergedFromPlansForAnyDevice) {
  const std::string dir = ::testing::TempDir() + "plans_merge_" + std::to_string(::getpid()) + "_";
  const PartitionPlan want = two_devices();
  {
    DevicePlan zero = want.devices[0];
    zero.device = kAnyDevice;
    DevicePlan one = want.devices[1];
    one.device = kAnyDevice;
    std::ofstream(dir + "0.json") << json_of(zero);
    std::ofstream(dir + "1.json") << json_of(one);
    std::ofstream(dir + "both.json") << json_of(want);
    std::ofstream(dir + "bad.json") << edited("\"sms\": 16", "\"sms\": 9");
  }
  auto merged = merge_partition_plans({{1, dir + "1.json"}, {0, dir + "0.json"}});  // any order
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(json_of(*merged), json_of(want));
  auto read = read_partition_plan(dir + "both.json");
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(json_of(*read), json_of(want));

  auto refused = [](const std::vector<std::pair<int, std::string>>& files, const std::string& part) {
    auto m = merge_partition_plans(files);
    TRTET_EXPECT_ERROR(m, GreenContextErrc::kInvalidArgument, part);
  };
  refused({}, "merging takes 1 to 64 plan files");
  refused({{0, dir + "0.json"}, {0, dir + "1.json"}}, "device 0 is given two plans");
  refused({{64, dir + "0.json"}}, "device 64 (" + dir + "0.json): a device index is 0 to 63");
  refused({{-1, dir + "0.json"}}, "device -1");
  refused({{0, dir + "0.json"}, {1, dir + "missing.json"}}, "cannot open " + dir + "missing.json");
  refused({{0, dir + "bad.json"}}, dir + "bad.json: partition plan: devices[0]: partition 'latency' has 9 SMs");
  refused({{0, dir + "both.json"}}, "names GPUs 0, 1 itself; merging takes plans for any device");
  for (const char* f : {"0.json", "1.json", "both.json", "bad.json"}) std::remove((dir + f).c_str());
  TRTET_EXPECT_ERROR_SAYS(read_partition_plan(dir + "both.json"), "cannot open");
}

PlanGpu on_device(PlanGpu gpu, int device) {
  gpu.device = device;
  return gpu;
}

TEST(PlansFile, CheckedAgainstEachGpuItIsFor) {
  const PartitionPlan plan = two_devices();
  auto counts = check_partition_plan(plan, {h200(), on_device(h200(120), 1)});
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  EXPECT_EQ(*counts, (std::vector<std::vector<unsigned>>{{16, 24, 32}, {32, 8}}));
  // A GPU the plan has no entry for.
  TRTET_EXPECT_ERROR(check_partition_plan(plan, {on_device(h200(), 2)}), GreenContextErrc::kInvalidArgument,
                     "the plan has no entry for GPU 2 (it splits GPUs 0, 1)");
  // Device 1 of another shape: refused naming device 1, whatever device 0 is.
  PlanGpu other = on_device(h200(), 1);
  other.name = "NVIDIA H100 PCIe";
  other.sm_count = 114;
  other.max_partitioned_sms = 112;
  auto shape = check_partition_plan(plan, {h200(), other});
  ASSERT_FALSE(shape.ok());
  TRTET_EXPECT_ERROR_SAYS(shape, "partition plan: device 1: it was made on 'NVIDIA H200'",
                          "but this GPU is 'NVIDIA H100 PCIe'");
  EXPECT_EQ(shape.error().limits().device, 1);
  EXPECT_EQ(shape.error().limits().sm_count, 114u);
  // Device 1 of the same kind whose split hands out fewer SMs than its plan's total.
  PartitionPlan big = plan;
  big.devices[1].partitions = {{"a", 64, 100, 0, 0, 0, ""}, {"b", 64, 100, 0, 0, 0, ""}};
  auto smaller = check_partition_plan(big, {h200(), on_device(h200(120), 1)});
  ASSERT_FALSE(smaller.ok());
  TRTET_EXPECT_ERROR_SAYS(smaller, "device 1: the partitions ask for 128 SMs in all (64,64)");
  EXPECT_EQ(smaller.error().closest_valid(), (std::vector<unsigned>{56, 64}));
  // Only the GPUs given are checked (a GPU of any shape elsewhere).
  EXPECT_TRUE(check_partition_plan(plan, {on_device(h200(), 1)}).ok());
  // A plan for any device against several GPUs: each of them.
  auto any = check_partition_plan(PartitionPlan::of(three_models()), {h200(), on_device(h200(), 5)});
  ASSERT_TRUE(any.ok()) << any.error().message();
  EXPECT_EQ(any->size(), 2u);
}

// The machine's device count is checked first, through cudaGetDeviceCount alone: on a machine with
// fewer GPUs (CI has none) the plan is refused naming the count, and nothing is split.
TEST(PlansFile, ApplyRefusesAMachineWithFewerGpusNamingItsCount) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  (void)cudaGetLastError();
  PartitionPlan plan = two_devices();
  plan.devices[1].device = std::max(1, count);  // one device more than the machine has
  auto applied = apply_partition_plan(plan);
  ASSERT_FALSE(applied.ok());
  TRTET_EXPECT_ERROR(applied, count == 0 ? GreenContextErrc::kNoDevice : GreenContextErrc::kInvalidArgument,
                     "partition plan: the plan is for GPUs 0, " + std::to_string(std::max(1, count)) + " (",
                     "this machine has " + std::to_string(count) + " GPU" + (count == 1 ? "" : "s"));
  // A plan for any device, applied on the first device the machine lacks (device 0 on CI).
  auto lacking = apply_partition_plan(PartitionPlan::of(three_models()), count);
  ASSERT_FALSE(lacking.ok());
  TRTET_EXPECT_ERROR_SAYS(lacking,
                          "the plan is applied on GPU " + std::to_string(count) + " (" + std::to_string(count + 1) + " GPU",
                          "this machine has " + std::to_string(count) + " GPU");
  // A device the plan has no entry for.
  TRTET_EXPECT_ERROR(apply_partition_plan(two_devices(), 7), GreenContextErrc::kInvalidArgument,
                     "the plan has no entry for GPU 7 (it splits GPUs 0, 1)");
  // A malformed plan is refused before the device count.
  PartitionPlan bad = two_devices();
  bad.devices[0].partitions[0].sms = 7;
  auto refused = apply_partition_plan(bad);
  ASSERT_FALSE(refused.ok());
  TRTET_EXPECT_ERROR(refused, GreenContextErrc::kInvalidArgument,
                     "devices[0] (device 0): partition 'latency' has 7 SMs");
}

TEST(PlansFile, PartitionsAreFoundByDeviceAndName) {
  PlannedPartitions none;
  EXPECT_TRUE(none.devices().empty());
  TRTET_EXPECT_ERROR_SAYS(none.get(0, "chat"), "the plan split no GPU 0; it split none");
  PlannedPartitions two({0, 1, 1}, {"chat", "vision", "headroom"}, std::vector<GreenContext>(3));
  EXPECT_EQ(two.devices(), (std::vector<int>{0, 1}));
  ASSERT_TRUE(two.get(1, "headroom").ok());
  EXPECT_EQ(*two.get(1, "headroom"), &two.partitions()[2]);
  EXPECT_FALSE(two.get(0, "vision").ok());
  ASSERT_TRUE(two.get(0, "chat").ok());
  TRTET_EXPECT_ERROR_SAYS(two.get(1, "chat"), "no partition named 'chat' in the plan on GPU 1; it has 'vision', 'headroom'");
  TRTET_EXPECT_ERROR_SAYS(two.get(2, "chat"), "the plan split no GPU 2; it split GPUs 0, 1");
  TRTET_EXPECT_ERROR_SAYS(two.get("chat"), "the plan split GPUs 0, 1: name the device too");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
