// libFuzzer target (docs/SECURITY.md): plan files and plan set files, the JSON that a model repository
// hands the Triton backend (plan_file, plan_set_file) and that trtet-run and trtet-plan read. The
// first byte picks the reader (even: parse_partition_plan, odd: parse_plan_set); the rest is the text.
// Beyond "no crash, no leak, no UB":
//   - every refusal says why (a message that is not empty);
//   - what parses is written back, and that text parses and writes back to itself (the writer's
//     output is a fixed point of the reader);
//   - the checks against a GPU of the H200's shape, and a set's ladder for the SLO controller, answer
//     (either way) without a device.
#include <torch_tensorrt/executorch/PartitionPlan.h>
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace et = torch_tensorrt::executorch_backend;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "plan_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

et::PlanGpu h200() {
  et::PlanGpu gpu;
  gpu.device = 0;
  gpu.name = "NVIDIA H200";
  gpu.sm_count = 132;
  gpu.min_partition = 8;
  gpu.alignment = 8;
  gpu.granularity = 8;
  gpu.max_partitioned_sms = 120;
  return gpu;
}

void plan(std::string_view text) {
  auto parsed = et::parse_partition_plan(text);
  if (!parsed.ok()) {
    if (parsed.error().message().empty()) fail("a plan refused without a reason", std::string(text.substr(0, 200)));
    return;
  }
  auto written = et::partition_plan_json(*parsed);
  if (!written.ok()) fail("a plan that parsed does not write", written.error().message());
  auto again = et::parse_partition_plan(*written);
  if (!again.ok()) fail("a written plan does not parse", again.error().message() + "\n" + *written);
  auto rewritten = et::partition_plan_json(*again);
  if (!rewritten.ok() || *rewritten != *written) fail("a plan's round trip is not a fixed point", *written);
  (void)et::check_partition_plan(*parsed, {h200()});
}

void plan_set(std::string_view text) {
  auto parsed = et::parse_plan_set(text);
  if (!parsed.ok()) {
    if (parsed.error().message().empty()) fail("a plan set refused without a reason", std::string(text.substr(0, 200)));
    return;
  }
  auto written = et::plan_set_json(*parsed);
  if (!written.ok()) fail("a plan set that parsed does not write", written.error().message());
  auto again = et::parse_plan_set(*written);
  if (!again.ok()) fail("a written plan set does not parse", again.error().message() + "\n" + *written);
  auto rewritten = et::plan_set_json(*again);
  if (!rewritten.ok() || *rewritten != *written) fail("a plan set's round trip is not a fixed point", *written);
  (void)et::check_plan_set(*parsed, h200());
  (void)et::plan_set_ladder(*parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    plan(text);
  } else {
    plan_set(text);
  }
  return 0;
}
