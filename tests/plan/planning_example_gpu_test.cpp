// PLANNING.md's example (run_as_planned), compiled exactly as written, on the GPU: with a plan
// made on this GPU, the method runs on the partition planned as "latency" (its engine's kernels
// stay on that many SMs) with the right results; a plan made on another GPU shape is refused.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "executorch/pinned_elementwise_gpu.h"

bool run_as_planned(executorch::runtime::Method& method, const char* plan_file);  // PLANNING.md, as written

namespace trtet_test {
namespace {

namespace et = torch_tensorrt::executorch_backend;

std::string write_plan(const et::PlanGpu& gpu, unsigned latency_sms, const std::string& file) {
  et::DevicePlan plan;  // for any device
  plan.gpu = gpu;
  plan.partitions = {{"latency", latency_sms, 25000, 0, 0, 0, "elementwise_device.pte"},
                     {"other", gpu.granularity, 1000, 0, 0, 0, ""}};
  plan.remainder_name = "headroom";
  auto text = et::partition_plan_json(et::PartitionPlan::of(plan));
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message());
  const std::string path = ::testing::TempDir() + file;
  std::ofstream(path) << (text.ok() ? *text : "");
  return path;
}

TEST(PlanningExample, RunsOnThePlannedPartition) {
  TRTET_REQUIRE_GPU();
  if (!have_test_programs()) GTEST_FAIL() << "no test programs: flatc or ExecuTorch's program.fbs was not found";
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ensure_executorch_runtime();
  auto gpu = et::plan_gpu(0);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  const unsigned latency_sms = 2 * gpu->granularity;

  PinnedElementwiseMethod run;
  ASSERT_NO_FATAL_FAILURE(run.load(0.25f, 29, 5));

  const std::string path = write_plan(*gpu, latency_sms, "planning_example_gpu_test.json");
  ASSERT_TRUE(run_as_planned(run.get(), path.c_str())) << captured_log();
  ASSERT_NO_FATAL_FAILURE(run.expect_ran_within(latency_sms, "the engine ran outside the partition planned for it"));

  // The same plan made on a GPU with one more group of SMs: refused, and the method does not run.
  et::PlanGpu other = *gpu;
  other.sm_count += other.granularity;
  const std::string elsewhere = write_plan(other, latency_sms, "planning_example_gpu_test_other.json");
  EXPECT_FALSE(run_as_planned(run.get(), elsewhere.c_str()));
  std::remove(path.c_str());
  std::remove(elsewhere.c_str());
}

}  // namespace
}  // namespace trtet_test
