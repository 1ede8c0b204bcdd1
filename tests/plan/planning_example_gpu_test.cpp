// PLANNING.md's example (run_as_planned), compiled exactly as written, on the GPU: with a plan
// made on this GPU, the method runs on the partition planned as "latency" (its engine's kernels
// stay on that many SMs) with the right results; a plan made on another GPU shape is refused.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "common/gpu.h"
#include "engines/cuda_test_engine.h"
#include "executorch/executorch_test_support.h"

bool run_as_planned(executorch::runtime::Method& method, const char* plan_file);  // PLANNING.md, as written

namespace trtet_test {
namespace {

namespace et = torch_tensorrt::executorch_backend;
using etr::Error;

std::string write_plan(const et::PlanGpu& gpu, unsigned latency_sms, const std::string& file) {
  et::PartitionPlan plan;
  plan.gpu = gpu;
  plan.partitions = {{"latency", latency_sms, 25000, 0, 0, 0, "elementwise_device.pte"},
                     {"other", gpu.granularity, 1000, 0, 0, 0, ""}};
  plan.remainder_name = "headroom";
  auto text = et::partition_plan_json(plan);
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

  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("elementwise_device"), Error::Ok);  // records the SMs it runs on
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << captured_log();
  constexpr int kRows = 8, kCols = 64, kCount = kRows * kCols;
  float *x = nullptr, *y = nullptr, *out = nullptr;
  for (float** p : {&x, &y, &out}) ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(p), kCount * sizeof(float), 0), cudaSuccess);
  for (int i = 0; i < kCount; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 29);
    y[i] = static_cast<float>(i % 5);
    out[i] = -1.0f;
  }
  auto tx = ::executorch::extension::from_blob(x, {kRows, kCols});
  auto ty = ::executorch::extension::from_blob(y, {kRows, kCols});
  ASSERT_EQ(method->set_input(etr::EValue(*tx), 0), Error::Ok);
  ASSERT_EQ(method->set_input(etr::EValue(*ty), 1), Error::Ok);
  ASSERT_EQ(method->set_output_data_ptr(out, kCount * sizeof(float), 0), Error::Ok);
  auto* engine = dynamic_cast<CudaTestEngine*>(factory.last_engine());
  ASSERT_NE(engine, nullptr);
  TRTET_ASSERT_OK(engine->clear_recorded_sms());

  const std::string path = write_plan(*gpu, latency_sms, "planning_example_gpu_test.json");
  ASSERT_TRUE(run_as_planned(method.get(), path.c_str())) << captured_log();
  for (int i = 0; i < kCount; ++i) ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] - 0.5f * y[i]) << "element " << i;
  auto ran_on = engine->recorded_sms();
  ASSERT_TRUE(ran_on.ok()) << ran_on.status().to_string();
  EXPECT_GT(ran_on->size(), 0u);
  EXPECT_LE(ran_on->size(), latency_sms) << "the engine ran outside the partition planned for it";

  // The same plan made on a GPU with one more group of SMs: refused, and the method does not run.
  et::PlanGpu other = *gpu;
  other.sm_count += other.granularity;
  const std::string elsewhere = write_plan(other, latency_sms, "planning_example_gpu_test_other.json");
  EXPECT_FALSE(run_as_planned(method.get(), elsewhere.c_str()));
  std::remove(path.c_str());
  std::remove(elsewhere.c_str());
  for (float* p : {x, y, out}) cudaFreeHost(p);
}

}  // namespace
}  // namespace trtet_test
