// trtet-run on a GPU, run as a user runs it, on the generated programs (tests/tools/CMakeLists.txt):
// a partition and the whole GPU with the SMs the engine ran on, --compare's isolation, --sweep-sms's
// curve, CSV and recommendation, .npy inputs and outputs with the right values, and the GPU's limits
// in the errors. Label gpu: each test skips with CUDA's reason without a device.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/gpu.h"
#include "green/contains.h"
#include "run/npy.h"
#include "run/options.h"
#include "tools/run_binary.h"

namespace trtet_run_test {
namespace {

class RunCliGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_FAIL() << "no generated programs: flatc or ExecuTorch's program.fbs missing";
  }
  std::string device_program() const { return "'" + run_program("run_device") + "' --test-engines "; }
};

// "the engine's kernels ran on N SMs" in `output`, or -1.
int engine_sms(const std::string& output) {
  std::smatch m;
  static const std::regex pattern("the engine's kernels ran on ([0-9]+) SMs");
  return std::regex_search(output, m, pattern) ? std::stoi(m[1]) : -1;
}

TEST_F(RunCliGpu, APartitionRunPrintsItsLatencyAndStaysOnItsSms) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const Ran ran = run_trtet(device_program() + "--sms 32 -n 200 --warmup 10");
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_CONTAINS(ran.output, "32-SM partition");
  EXPECT_CONTAINS(ran.output, "p99 (us)");
  const int sms = engine_sms(ran.output);
  EXPECT_GT(sms, 0) << ran.output;
  EXPECT_LE(sms, 32) << "the engine ran outside its 32-SM partition";
}

TEST_F(RunCliGpu, TheWholeGpuRunReachesMoreSms) {
  const Ran ran = run_trtet(device_program() + "-n 200 --warmup 10");
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_CONTAINS(ran.output, "whole GPU");
  EXPECT_GT(engine_sms(ran.output), 32) << ran.output;
}

TEST_F(RunCliGpu, ComparePrintsFourConditionsAndThePartitionIsolates) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();  // compares p99 beside a load; the tool also runs the load's kernels 10-100x slower
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const Ran ran = run_trtet(device_program() + "--sms 32 --compare -n 300 --warmup 10");
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  for (const char* row : {"32-SM partition, alone", "32-SM partition, beside load", "whole GPU, alone",
                          "whole GPU, beside load"}) {
    EXPECT_CONTAINS(ran.output, row);
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ran.output, m,
                                std::regex("p99 grows ([0-9.]+)x on the 32-SM partition and ([0-9.]+)x on the whole GPU")))
      << ran.output;
  const double green = std::stod(m[1]);
  const double whole = std::stod(m[2]);
  EXPECT_LT(green, whole) << "the load slowed the partition more than the shared GPU";
  const int sms = engine_sms(ran.output);
  EXPECT_GT(sms, 0);
  EXPECT_LE(sms, 32) << "beside the load, the engine left its partition";
}

TEST_F(RunCliGpu, SweepPrintsTheCurveWritesCsvAndRecommends) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const std::string csv = ::testing::TempDir() + "trtet_run_sweep.csv";
  std::remove(csv.c_str());
  const Ran ran = run_trtet(device_program() + "--sweep-sms 8:32:8 --p99-target-us 1000000 -n 100 --warmup 5 --csv '" +
                            csv + "'");
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  for (const char* row : {"8-SM partition", "16-SM partition", "24-SM partition", "32-SM partition", "whole GPU"}) {
    EXPECT_CONTAINS(ran.output, row);
  }
  EXPECT_CONTAINS(ran.output, "recommendation: 8 SMs (p99 ");
  std::ifstream in(csv);
  ASSERT_TRUE(in) << "no CSV at " << csv;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 1 + 4 + 1) << "header, four partitions, the whole GPU";
}

TEST_F(RunCliGpu, AnUnmeetableTargetExitsFour) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  const Ran ran = run_trtet(device_program() + "--sweep-sms 8:16:8 --p99-target-us 0.001 -n 20 --warmup 2");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitTargetMissed) << ran.output;
  EXPECT_CONTAINS(ran.output, "not met");
}

TEST_F(RunCliGpu, AMisalignedPartitionNamesTheGpusLimits) {
  const Ran ran = run_trtet(device_program() + "--sms 30 -n 5");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "granularity");
  EXPECT_CONTAINS(ran.output, "closest valid request: 32");
  const Ran sweep = run_trtet(device_program() + "--sweep-sms 4:12:4 -n 5");
  EXPECT_EQ(sweep.exit_code, trtet_run::kExitUsage) << sweep.output;
  EXPECT_CONTAINS(sweep.output, "granularity");
}

// x and y from .npy files, the output written back: out = 2x - 0.5y (the elementwise engine).
void check_npy_round_trip(const std::string& program, const std::string& extra) {
  const std::string dir = ::testing::TempDir();
  trtet_run::NpyArray x, y;
  x.descr = y.descr = "<f4";
  x.shape = y.shape = {64, 4096};
  std::vector<float> xs(64 * 4096), ys(64 * 4096);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = 0.25f * static_cast<float>(i % 101);
    ys[i] = static_cast<float>(i % 13) - 6.0f;
  }
  x.data.assign(reinterpret_cast<std::uint8_t*>(xs.data()), reinterpret_cast<std::uint8_t*>(xs.data() + xs.size()));
  y.data.assign(reinterpret_cast<std::uint8_t*>(ys.data()), reinterpret_cast<std::uint8_t*>(ys.data() + ys.size()));
  ASSERT_TRUE(trtet_run::write_npy(dir + "x.npy", x, /*overwrite=*/true).ok());
  ASSERT_TRUE(trtet_run::write_npy(dir + "y.npy", y, /*overwrite=*/true).ok());
  std::remove((dir + "output_0.npy").c_str());
  const Ran ran = run_trtet("'" + program + "' --test-engines --input '" + dir + "x.npy' --input '" + dir +
                            "y.npy' --save-outputs '" + dir + "' -n 3 --warmup 1 " + extra);
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  auto out = trtet_run::read_npy(dir + "output_0.npy");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->descr, "<f4");
  ASSERT_EQ(out->shape, (std::vector<std::int64_t>{64, 4096}));
  const float* values = reinterpret_cast<const float*>(out->data.data());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ASSERT_FLOAT_EQ(values[i], 2.0f * xs[i] - 0.5f * ys[i]) << "element " << i;
  }
}

TEST_F(RunCliGpu, NpyInputsGiveTheRightOutputsWithDeviceIoOnAPartition) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  check_npy_round_trip(run_program("run_device"), "--sms 16 --io device");
}

TEST_F(RunCliGpu, NpyInputsGiveTheRightOutputsWithPinnedIo) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  check_npy_round_trip(run_program("run_device"), "--sms 16 --io pinned");
}

TEST_F(RunCliGpu, PlannedHostIoGivesTheRightOutputs) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  check_npy_round_trip(run_program("run_planned"), "--sms 16");
}

TEST_F(RunCliGpu, AWrongDtypeInputFileIsRefused) {
  const std::string dir = ::testing::TempDir();
  trtet_run::NpyArray x;
  x.descr = "<i4";
  x.shape = {8, 64};
  x.data.assign(8 * 64 * 4, 0);
  ASSERT_TRUE(trtet_run::write_npy(dir + "int.npy", x, /*overwrite=*/true).ok());
  const Ran ran = run_trtet(device_program() + "--input '" + dir + "int.npy' --input '" + dir + "int.npy' -n 1");
  EXPECT_EQ(ran.exit_code, trtet_run::kExitUsage) << ran.output;
  EXPECT_CONTAINS(ran.output, "is float32");
}

}  // namespace
}  // namespace trtet_run_test
