// trtet-run's command line on the CPU: argument errors exit 1 with the reason, --help exits 0,
// a damaged program is refused as such before anything else, and a valid command on a machine
// without a GPU exits 2 saying so.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "common/flatbuffer_edit.h"
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

// run_device.pte as bytes, changed by `edit`, written where trtet-run is run on it.
template <typename Edit>
std::string edited_run_device(const char* name, Edit edit) {
  std::ifstream in(run_program("run_device"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(bytes.size(), 64u);
  if (bytes.size() > 64) edit(bytes);
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(RunCli, ADamagedProgramIsRefusedAsSuchOnAnyMachine) {
  if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs (flatc or program.fbs missing)";
  // run_device.pte with its flatbuffer's root offset pointing far past the file's end: the header
  // ExecuTorch's default verification checks is intact, the tables are not.
  const std::string path = edited_run_device("trtet_run_damaged.pte", [](std::string& bytes) {
    bytes[0] = '\xf0';
    bytes[1] = '\xff';
    bytes[2] = '\xff';
    bytes[3] = '\x0f';
  });
  const Ran ran = run_trtet("'" + path + "' --test-engines --sms 32 -n 10");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "is not a program this runtime reads");
  EXPECT_CONTAINS(ran.output, "verifying it");
}

TEST(RunCli, ADelegateWithoutItsCompileSpecsIsRefusedAsSuchOnAnyMachine) {
  if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs (flatc or program.fbs missing)";
  // run_device.pte with its delegate's compile_specs field left out: ExecuTorch 1.5.1 would read the
  // missing vector in the method's load (Note [a delegate's fields]).
  namespace fb = trtet_test::flatbuffer;
  const std::string path = edited_run_device("trtet_run_no_specs.pte", [](std::string& bytes) {
    const std::size_t delegates = fb::target(bytes, fb::first_plan(bytes), 7);
    ASSERT_GT(fb::u32_at(bytes, delegates), 0u) << "run_device has a delegate";
    fb::drop_field(bytes, fb::element(bytes, delegates, 0), 2);
  });
  const Ran ran = run_trtet("'" + path + "' --test-engines --sms 32 -n 10");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "delegate 0 of method 'forward' lacks its compile specs");
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
