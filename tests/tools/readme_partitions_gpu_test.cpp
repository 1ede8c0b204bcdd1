// README's partitions example ("### Partitions of the GPU"), compiled exactly as written
// (extract_readme_partitions.cmake) and run here on a generated program: it must split the GPU,
// run the method on its 32-SM partition with the right results, and stay inside that partition.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/gpu.h"
#include "executorch/executorch_test_support.h"
#include "executorch/pinned_elementwise_gpu.h"

bool run_on_32_sms(executorch::runtime::Method& method);  // README, as written

namespace trtet_test {
namespace {

TEST(ReadmePartitions, ExampleRunsAsWrittenOn32Sms) {
  TRTET_REQUIRE_GPU();
  if (!have_test_programs()) GTEST_FAIL() << "no test programs: flatc or ExecuTorch's program.fbs was not found";
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ensure_executorch_runtime();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms <= 32) GTEST_SKIP() << "the example asks for 32 SMs and a remainder; this GPU has " << sms;

  // Pinned host I/O: the example synchronizes its stream, after which the outputs are in place.
  PinnedElementwiseMethod run;
  ASSERT_NO_FATAL_FAILURE(run.load(0.5f, 31, 7));

  ASSERT_TRUE(run_on_32_sms(run.get())) << captured_log();

  ASSERT_NO_FATAL_FAILURE(run.expect_ran_within(32u, "the example's engine ran outside its 32-SM partition"));
}

}  // namespace
}  // namespace trtet_test
