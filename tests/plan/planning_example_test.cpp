// PLANNING.md's example (run_as_planned), compiled exactly as written, on the CPU: a plan file that
// is missing, malformed or made on another GPU is refused before the method runs.
#include <gtest/gtest.h>

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstdio>
#include <fstream>

#include "executorch/executorch_test_support.h"

bool run_as_planned(executorch::runtime::Method& method, const char* plan_file);  // PLANNING.md, as written

namespace trtet_test {
namespace {

TEST(PlanningExample, ABadPlanFileIsRefusedBeforeTheMethodRuns) {
  if (!have_test_programs()) GTEST_FAIL() << "no test programs: flatc or ExecuTorch's program.fbs was not found";
  ensure_executorch_runtime();
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("fake"), etr::Error::Ok);  // the fake engine: no GPU needed
  auto method = direct.load_method();
  if (!method.ok()) GTEST_SKIP() << "the fake program does not load here: " << captured_log();
  const std::string path = ::testing::TempDir() + "planning_example_test.json";
  EXPECT_FALSE(run_as_planned(method.get(), path.c_str()));  // no file yet
  std::ofstream(path) << "{\"format\": \"trtet-partition-plan\", \"version\": 1}";
  EXPECT_FALSE(run_as_planned(method.get(), path.c_str()));  // malformed
  std::remove(path.c_str());
}

}  // namespace
}  // namespace trtet_test
