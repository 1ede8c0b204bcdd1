// The fixed seed sets on the GPU (label gpu; skip without a GPU): every seed's sequence through
// the Session, and (where ExecuTorch was found) through ExecuTorch's Module, every output against
// the CPU reference. Each prints its summary line either way.
#include <gtest/gtest.h>

#include <iostream>

#include "common/gpu.h"
#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/runner.h"
#include "contract_fuzz/seed_sets.h"
#include "contract_fuzz/self_path.h"

namespace trtet_test::fuzz {
namespace {

/// Runs `configs` (each on its own leg) with shrinking and reports; expects no failure.
void run_seed_set(const std::vector<FuzzConfig>& configs, const char* what) {
  const bool sanitizer = trtet_test::under_sanitizer();
  start_watchdog(sanitizer ? 1500 : 120);
  RunnerOptions options;
  options.self = self_path();
  options.verbose = true;
  // Trial processes would run outside compute-sanitizer's control: report unshrunk there.
  options.shrink = !sanitizer;
  options.shrink_seconds = 60;
  Runner runner(options, std::cout);
  std::cout << "contract-fuzz: " << configs.size() << " " << what << " seeds"
            << (sanitizer ? " (the compute-sanitizer set)" : "") << std::endl;
  for (const FuzzConfig& config : configs) {
    runner.run(config);
    if (!runner.usable()) break;
  }
  std::cout << runner.summary() << std::endl;
  EXPECT_EQ(runner.failures(), 0u) << "see each FAILURE report above: seed, shortest reproducing sequence, command";
  EXPECT_GT(runner.tally().calls.load(), 0u) << "the seed set made no calls";
}

TEST(ContractFuzzGpu, SessionSeedSet) {
  TRTET_REQUIRE_GPU();
  run_seed_set(trtet_test::under_sanitizer() ? sanitizer_seed_set() : regression_seed_set(), "session");
}

#if TRTET_FUZZ_HAVE_EXECUTORCH
TEST(ContractFuzzGpu, ExecuTorchSeedSet) {
  TRTET_REQUIRE_GPU();
  run_seed_set(trtet_test::under_sanitizer() ? et_sanitizer_seed_set() : et_regression_seed_set(), "executorch");
}
#endif

}  // namespace
}  // namespace trtet_test::fuzz
