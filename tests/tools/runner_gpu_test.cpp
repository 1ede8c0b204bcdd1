// The runner's library on a GPU: measurements on a partition stay on the partition's SMs even
// beside the load on the remainder, the load really occupies the remainder, and it stops promptly.
#include <torch_tensorrt/executorch/GreenContext.h>

#include <gtest/gtest.h>

#include <chrono>

#include "common/gpu.h"
#include "green/probe.h"
#include "run/load.h"
#include "run/runner.h"
#include "tools/run_binary.h"

namespace trtet_run {
namespace {

namespace et = torch_tensorrt::executorch_backend;

class RunnerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_FAIL() << "no generated programs: flatc or ExecuTorch's program.fbs missing";
    TRTET_SKIP_IF_GREEN_UNSUPPORTED();  // every test runs on the split below
    options_.program = trtet_run_test::run_program("run_device");
    options_.test_engines = true;
    auto runner = Runner::load(options_);
    ASSERT_TRUE(runner.ok()) << runner.status().to_string();
    runner_ = std::move(*runner);
    auto split = et::split_device(0, {16}, et::Remainder::kKeep);
    ASSERT_TRUE(split.ok()) << split.error().message();
    partitions_ = std::move(*split);
  }

  RunOptions options_;
  std::unique_ptr<Runner> runner_;
  std::vector<et::GreenContext> partitions_;
};

TEST_F(RunnerGpu, BesideTheLoadTheEngineStaysOnItsPartition) {
  if (trtet_test::sanitizer_tool() == "racecheck") {
    // Measured on the H200: trtet-run ends the same way under racecheck with --compare (which
    // starts the load) and runs to the end without it; memcheck and synccheck run this test.
    GTEST_SKIP() << "the load (tools/run/load.cu) ends the process under racecheck (exit 9, 0 hazards reported)";
  }
  et::GreenContext& mine = partitions_[0];
  et::GreenContext& rest = partitions_[1];
  auto reach = et::green::probe_sms(mine.stream());
  auto rest_reach = et::green::probe_sms(rest.stream());
  ASSERT_TRUE(reach.ok() && rest_reach.ok());

  auto load = Load::start(rest.stream(), 0, 500);
  ASSERT_TRUE(load.ok()) << load.status().to_string();
  auto m = runner_->measure(mine.stream(), 100, 5);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_GT((*load)->launched(), 1) << "the feeder kept the load queued";
  const auto stop_start = std::chrono::steady_clock::now();
  load->reset();
  const double stop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stop_start).count();
  if (!trtet_test::under_sanitizer()) {  // the tool slows the load's kernels 10-100x
    EXPECT_LT(stop_ms, 50.0) << "stopping the load waits for at most the queued kernels (2-3 x 0.5 ms)";
  }

  ASSERT_TRUE(m->engine_sms.has_value()) << "the run_device program's engine records its SMs";
  EXPECT_FALSE(m->engine_sms->empty());
  EXPECT_EQ(et::green::shared_sms(*m->engine_sms, *reach), m->engine_sms->size())
      << "the engine ran on SMs its partition's stream cannot reach";
  EXPECT_EQ(et::green::shared_sms(*m->engine_sms, *rest_reach), 0u) << "the engine ran on the load's SMs";
  EXPECT_EQ(m->stats.calls, 100u);
  EXPECT_GT(m->stats.p50_us, 0);
  EXPECT_LE(m->stats.p50_us, m->stats.p90_us);
  EXPECT_LE(m->stats.p90_us, m->stats.p99_us);
  EXPECT_LE(m->stats.p99_us, m->stats.max_us);
  EXPECT_GT(m->stats.calls_per_s, 0);
}

// The load on the remainder slows a whole-GPU stream's kernels (it holds those SMs), which is
// what makes --compare's contrast: a whole-GPU run beside it is slower than alone.
TEST_F(RunnerGpu, TheLoadSlowsWhatSharesItsSms) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  cudaStream_t whole = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&whole, cudaStreamNonBlocking), cudaSuccess);
  cudaStream_t load_stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&load_stream, cudaStreamNonBlocking), cudaSuccess);
  auto alone = runner_->measure(whole, 100, 5);
  ASSERT_TRUE(alone.ok()) << alone.status().to_string();
  {
    auto load = Load::start(load_stream, 0, 1000);
    ASSERT_TRUE(load.ok()) << load.status().to_string();
    auto beside = runner_->measure(whole, 100, 5);
    ASSERT_TRUE(beside.ok()) << beside.status().to_string();
    std::printf("whole GPU p99: alone %.1f us, beside the load %.1f us\n", alone->stats.p99_us, beside->stats.p99_us);
    EXPECT_GT(beside->stats.p99_us, 2 * alone->stats.p99_us);
  }
  cudaStreamDestroy(load_stream);
  cudaStreamDestroy(whole);
}

TEST_F(RunnerGpu, SavingBeforeAnyCallIsInvalidState) {
  auto fresh = Runner::load(options_);
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  const auto saved = (*fresh)->save_outputs(::testing::TempDir(), partitions_[0].stream());
  EXPECT_EQ(saved.code(), torch_tensorrt::executorch_backend::ErrorCode::kInvalidState);
}

}  // namespace
}  // namespace trtet_run
