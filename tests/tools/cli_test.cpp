// trtet-run's command line on the CPU: argument errors exit 1 with the reason, --help exits 0,
// a damaged program is refused as such before anything else, and a valid command on a machine
// without a GPU exits 2 saying so.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "common/gpu.h"
#include "green/contains.h"
#include "run/options.h"
#include "tools/run_binary.h"

namespace trtet_run_test {
namespace {

TEST(RunCli, HelpExitsZero) {
  const Ran ran = run_trtet("--help");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_CONTAINS(ran.output, "Usage: trtet-run");
  EXPECT_CONTAINS(ran.output, "--sweep-sms");
}

TEST(RunCli, NoProgramIsAUsageError) {
  const Ran ran = run_trtet("");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "program is required");
}

TEST(RunCli, AMissingProgramFileIsAUsageError) {
  const Ran ran = run_trtet("/no/such/model.pte --sms 32");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "/no/such/model.pte");
}

TEST(RunCli, CompareWithoutSmsIsAUsageError) {
  const Ran ran = run_trtet("'" TRTET_RUN_BINARY "' --compare");  // any existing file stands for the program
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "--compare requires --sms");
}

TEST(RunCli, ABadSweepIsAUsageError) {
  const Ran ran = run_trtet("'" TRTET_RUN_BINARY "' --sweep-sms 32:8:8");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "FIRST is above LAST");
}

TEST(RunCli, ADamagedProgramIsRefusedAsSuchOnAnyMachine) {
  if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs (flatc or program.fbs missing)";
  // run_device.pte with its flatbuffer's root offset pointing far past the file's end: the header
  // ExecuTorch's default verification checks is intact, the tables are not.
  std::ifstream in(run_program("run_device"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 64u);
  bytes[0] = '\xf0';
  bytes[1] = '\xff';
  bytes[2] = '\xff';
  bytes[3] = '\x0f';
  const std::string path = ::testing::TempDir() + "trtet_run_damaged.pte";
  std::ofstream(path, std::ios::binary) << bytes;
  const Ran ran = run_trtet("'" + path + "' --test-engines --sms 32 -n 10");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "is not a program this runtime reads");
  EXPECT_CONTAINS(ran.output, "verifying it");
}

TEST(RunCli, WithoutAGpuAValidCommandExitsTwoSayingSo) {
  if (trtet_test::no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present (run_cli_gpu_test covers this machine)";
  if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs (flatc or program.fbs missing)";
  const Ran ran = run_trtet("'" + run_program("run_device") + "' --test-engines --sms 32 -n 10");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitNoGpu) << ran.output;
  EXPECT_CONTAINS(ran.output, "no usable GPU");
}

}  // namespace
}  // namespace trtet_run_test
