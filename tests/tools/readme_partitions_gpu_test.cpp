// README's partitions example ("### Partitions of the GPU"), compiled exactly as written
// (extract_readme_partitions.cmake) and run here on a generated program: it must split the GPU,
// run the method on its 32-SM partition with the right results, and stay inside that partition.
#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/gpu.h"
#include "engines/cuda_test_engine.h"
#include "executorch/executorch_test_support.h"

bool run_on_32_sms(executorch::runtime::Method& method);  // README, as written

namespace trtet_test {
namespace {

using etr::Error;

TEST(ReadmePartitions, ExampleRunsAsWrittenOn32Sms) {
  TRTET_REQUIRE_GPU();
  if (!have_test_programs()) GTEST_FAIL() << "no test programs: flatc or ExecuTorch's program.fbs was not found";
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ensure_executorch_runtime();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms <= 32) GTEST_SKIP() << "the example asks for 32 SMs and a remainder; this GPU has " << sms;

  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("elementwise_device"), Error::Ok);  // records the SMs it runs on
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << captured_log();
  // Pinned host I/O: the example synchronizes its stream, after which the outputs are in place.
  constexpr int kRows = 8, kCols = 64, kCount = kRows * kCols;
  float *x = nullptr, *y = nullptr, *out = nullptr;
  for (float** p : {&x, &y, &out}) ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(p), kCount * sizeof(float), 0), cudaSuccess);
  for (int i = 0; i < kCount; ++i) {
    x[i] = 0.5f * static_cast<float>(i % 31);
    y[i] = static_cast<float>(i % 7);
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

  ASSERT_TRUE(run_on_32_sms(method.get())) << captured_log();

  for (int i = 0; i < kCount; ++i) ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] - 0.5f * y[i]) << "element " << i;
  auto ran_on = engine->recorded_sms();
  ASSERT_TRUE(ran_on.ok()) << ran_on.status().to_string();
  EXPECT_GT(ran_on->size(), 0u);
  EXPECT_LE(ran_on->size(), 32u) << "the example's engine ran outside its 32-SM partition";
  for (float* p : {x, y, out}) cudaFreeHost(p);
}

}  // namespace
}  // namespace trtet_test
