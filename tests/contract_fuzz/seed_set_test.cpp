// The fixed seed set on the GPU (label gpu; skips without a GPU): every seed's sequence through
// the Session, every output against the CPU reference. Prints the summary line either way.
#include <gtest/gtest.h>

#include <iostream>

#include "common/gpu.h"
#include "contract_fuzz/runner.h"
#include "contract_fuzz/seed_sets.h"
#include "contract_fuzz/self_path.h"

namespace trtet_test::fuzz {
namespace {

TEST(ContractFuzzGpu, SessionSeedSet) {
  TRTET_REQUIRE_GPU();
  const bool sanitizer = trtet_test::under_sanitizer();
  start_watchdog(sanitizer ? 1500 : 120);
  RunnerOptions options;
  options.self = self_path();
  options.verbose = true;
  // Trial processes would run outside compute-sanitizer's control: report unshrunk there.
  options.shrink = !sanitizer;
  options.shrink_seconds = 60;
  Runner runner(options, std::cout);
  const std::vector<FuzzConfig> configs = sanitizer ? sanitizer_seed_set() : regression_seed_set();
  std::cout << "contract-fuzz: " << configs.size() << " seeds" << (sanitizer ? " (the compute-sanitizer set)" : "")
            << std::endl;
  for (const FuzzConfig& config : configs) {
    runner.run(config);
    if (!runner.usable()) break;
  }
  std::cout << runner.summary() << std::endl;
  EXPECT_EQ(runner.failures(), 0u) << "see each FAILURE report above: seed, shortest reproducing sequence, command";
  EXPECT_GT(runner.tally().calls.load(), 0u) << "the seed set made no calls";
}

}  // namespace
}  // namespace trtet_test::fuzz
