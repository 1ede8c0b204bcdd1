// trtet-run's command line (CLI11): what parses, what is refused and with which words.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "green/contains.h"
#include "run/options.h"

namespace trtet_run {
namespace {

// A real file for the program argument (CLI11 checks it exists).
const std::string& program() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "trtet_run_options_test.pte";
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (f != nullptr) std::fclose(f);
    return p;
  }();
  return path;
}

ParseOutcome parse(std::vector<std::string> args, bool have_test_engines = true) {
  args.insert(args.begin(), "trtet-run");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_options(static_cast<int>(argv.size()), argv.data(), have_test_engines);
}

TEST(RunOptions, DefaultsRunTheWholeGpuWithDeviceIo) {
  const ParseOutcome o = parse({program()});
  ASSERT_TRUE(o.run) << o.message;
  EXPECT_EQ(o.options.program, program());
  EXPECT_EQ(o.options.method, "forward");
  EXPECT_EQ(o.options.sms, 0u);
  EXPECT_EQ(o.options.iterations, 1000);
  EXPECT_EQ(o.options.warmup, 50);
  EXPECT_EQ(o.options.io, IoMemory::kDevice);
  EXPECT_FALSE(o.options.compare);
  EXPECT_TRUE(o.options.sweep_counts.empty());
}

TEST(RunOptions, EveryOptionParses) {
  const ParseOutcome o = parse({program(), "--sms", "32", "-n", "200", "--warmup", "5", "--io", "pinned", "--shape",
                                "8x64", "--seed", "7", "--compare", "--load-us", "500", "--p99-target-us", "150.5",
                                "--test-engines", "--method", "decode", "--device", "0"});
  ASSERT_TRUE(o.run) << o.message;
  EXPECT_EQ(o.options.sms, 32u);
  EXPECT_EQ(o.options.iterations, 200);
  EXPECT_EQ(o.options.warmup, 5);
  EXPECT_EQ(o.options.io, IoMemory::kPinned);
  EXPECT_EQ(o.options.shapes, std::vector<std::string>{"8x64"});
  EXPECT_EQ(o.options.seed, 7u);
  EXPECT_TRUE(o.options.compare);
  EXPECT_EQ(o.options.load_us, 500);
  EXPECT_DOUBLE_EQ(o.options.p99_target_us, 150.5);
  EXPECT_TRUE(o.options.test_engines);
  EXPECT_EQ(o.options.method, "decode");
}

TEST(RunOptions, EtdumpNamesTheFileOfASingleRun) {
  const ParseOutcome o = parse({program(), "--sms", "32", "--etdump", "run.etdp"});
  ASSERT_TRUE(o.run) << o.message;
  EXPECT_EQ(o.options.etdump, "run.etdp");
}

TEST(RunOptions, SweepRangeExpands) {
  const ParseOutcome o = parse({program(), "--sweep-sms", "8:132:8", "--p99-target-us", "200", "--csv", "c.csv"});
  ASSERT_TRUE(o.run) << o.message;
  ASSERT_EQ(o.options.sweep_counts.size(), 16u);
  EXPECT_EQ(o.options.sweep_counts.front(), 8u);
  EXPECT_EQ(o.options.sweep_counts.back(), 128u);
  EXPECT_EQ(o.options.csv, "c.csv");
}

TEST(RunOptions, RepeatedInputsKeepTheirOrder) {
  const ParseOutcome o = parse({program(), "--input", program(), "--input", program()});
  ASSERT_TRUE(o.run) << o.message;
  EXPECT_EQ(o.options.inputs.size(), 2u);
}

TEST(RunOptions, HelpExitsZeroWithTheUsage) {
  const ParseOutcome o = parse({"--help"});
  EXPECT_FALSE(o.run);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_CONTAINS(o.message, "--sweep-sms");
  EXPECT_CONTAINS(o.message, "Exit status");
}

struct Refused {
  std::vector<std::string> args;
  const char* says;
};

class RunOptionsRefuse : public ::testing::TestWithParam<Refused> {};

TEST_P(RunOptionsRefuse, WithUsageExitAndReason) {
  std::vector<std::string> args = GetParam().args;
  for (std::string& a : args) {
    if (a == "@P") a = program();
  }
  const ParseOutcome o = parse(args);
  EXPECT_FALSE(o.run);
  EXPECT_EQ(o.exit_code, kExitUsage);
  EXPECT_CONTAINS(o.message, GetParam().says);
  EXPECT_CONTAINS(o.message, "trtet-run: ");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RunOptionsRefuse,
    ::testing::Values(Refused{{}, "program is required"},
                      Refused{{"/no/such/model.pte"}, "File does not exist"},
                      Refused{{"@P", "--compare"}, "--compare requires --sms"},
                      Refused{{"@P", "--sms", "32", "--sweep-sms", "8:32:8"}, "excludes"},
                      Refused{{"@P", "--csv", "x.csv"}, "--csv requires --sweep-sms"},
                      Refused{{"@P", "--sweep-sms", "8:4:8"}, "FIRST is above LAST"},
                      Refused{{"@P", "--sweep-sms", "8-32"}, "FIRST:LAST:STEP"},
                      Refused{{"@P", "--sweep-sms", "0:32:8"}, "at least 1 SM"},
                      Refused{{"@P", "--io", "gpu"}, "--io"},
                      Refused{{"@P", "--sms", "0"}, "--sms"},
                      Refused{{"@P", "-n", "0"}, "--iterations"},
                      Refused{{"@P", "--p99-target-us", "-3"}, "--p99-target-us"},
                      Refused{{"@P", "--shape", "8by64"}, "DIMxDIMx"},
                      Refused{{"@P", "--input", "@P", "--shape", "8x64"}, "--shape applies to random inputs"},
                      Refused{{"@P", "--sms", "32", "--compare", "--save-outputs", "/tmp"}, "excludes"},
                      Refused{{"@P", "--sweep-sms", "8:16:8", "--save-outputs", "/tmp"}, "excludes"},
                      Refused{{"@P", "--sms", "32", "--compare", "--etdump", "run.etdp"}, "excludes"},
                      Refused{{"@P", "--sweep-sms", "8:16:8", "--etdump", "run.etdp"}, "excludes"},
                      Refused{{"@P", "--bogus"}, "--bogus"}));

TEST(RunOptions, TestEnginesAreRefusedWhereTheBuildHasNone) {
  const ParseOutcome o = parse({program(), "--test-engines"}, /*have_test_engines=*/false);
  EXPECT_FALSE(o.run);
  EXPECT_EQ(o.exit_code, kExitUsage);
  EXPECT_CONTAINS(o.message, "no test engines");
}

TEST(RunOptions, DimsParse) {
  auto dims = parse_dims("64x4096");
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(*dims, (std::vector<long long>{64, 4096}));
  EXPECT_EQ(*parse_dims("7"), std::vector<long long>{7});
  EXPECT_FALSE(parse_dims("").ok());
  EXPECT_FALSE(parse_dims("8x").ok());
  EXPECT_FALSE(parse_dims("x8").ok());
  EXPECT_FALSE(parse_dims("-1x8").ok());
  EXPECT_EQ(*parse_dims("2147483647x0"), (std::vector<long long>{2147483647, 0}));
}

// --shape 2147483648x2147483648 would give 2^62 elements (and, cut to ExecuTorch's 32-bit sizes, a
// 0-byte buffer): dimensions past ExecuTorch's and counts past 64 bits are refused.
TEST(RunOptions, ShapesPastExecuTorchsSizesOrSixtyFourBitsAreRefused) {
  for (const char* shape : {"2147483648x2147483648", "4294967296", "65536x65536x65536x65536",
                            "2147483647x2147483647x2147483647"}) {
    SCOPED_TRACE(shape);
    EXPECT_FALSE(parse_dims(shape).ok());
    const ParseOutcome o = parse({program(), "--shape", shape});
    EXPECT_FALSE(o.run);
    EXPECT_EQ(o.exit_code, kExitUsage);
  }
  TRTET_EXPECT_ERROR_SAYS(parse_dims("2147483648x2").status(), "more than ExecuTorch's largest");
  TRTET_EXPECT_ERROR_SAYS(parse_dims("65536x65536x65536x65536").status(), "more elements than fit in 64 bits");
}

TEST(RunOptions, OverwriteIsOffUnlessAsked) {
  EXPECT_FALSE(parse({program()}).options.overwrite);
  EXPECT_TRUE(parse({program(), "--overwrite"}).options.overwrite);
}

}  // namespace
}  // namespace trtet_run
