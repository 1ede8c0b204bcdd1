// trtet-run's command line on the CPU: argument errors exit 1 with the reason, --help exits 0,
// a damaged program is refused as such before anything else, and a valid command on a machine
// without a GPU exits 2 saying so.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

TEST(RunCli, ADelegateWithoutItsCompileSpecsIsRefusedAsSuchOnAnyMachine) {
  if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_SKIP() << "no generated programs (flatc or program.fbs missing)";
  // run_device.pte with its delegate's compile_specs field left out (its vtable slot 0): ExecuTorch
  // 1.5.1 would read the missing vector in the method's load (Note [a delegate's fields]).
  std::ifstream in(run_program("run_device"), std::ios::binary);
  std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(b.size(), 64u);
  auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, b.data() + at, sizeof v);
    return static_cast<std::size_t>(v);
  };
  auto slot = [&](std::size_t table, int field) {
    std::int32_t back = 0;
    std::memcpy(&back, b.data() + table, sizeof back);
    return static_cast<std::size_t>(static_cast<std::int64_t>(table) - back) + 4 + 2 * static_cast<std::size_t>(field);
  };
  auto target = [&](std::size_t table, int field) {
    std::uint16_t o = 0;
    std::memcpy(&o, b.data() + slot(table, field), sizeof o);
    return table + o + u32(table + o);
  };
  const std::size_t plans = target(u32(0), 1);
  const std::size_t plan = plans + 4 + u32(plans + 4);
  const std::size_t delegates = target(plan, 7);
  ASSERT_GT(u32(delegates), 0u) << "run_device has a delegate";
  const std::size_t delegate = delegates + 4 + u32(delegates + 4);
  b[slot(delegate, 2)] = 0;
  b[slot(delegate, 2) + 1] = 0;
  const std::string path = ::testing::TempDir() + "trtet_run_no_specs.pte";
  std::ofstream(path, std::ios::binary) << b;
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
