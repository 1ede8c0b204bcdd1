#include "contract_fuzz/seed_sets.h"

namespace trtet_test::fuzz {

std::vector<FuzzConfig> regression_seed_set() {
  std::vector<FuzzConfig> configs;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    config.length = 30;
    configs.push_back(config);
  }
  return configs;
}

std::vector<FuzzConfig> sanitizer_seed_set() {
  std::vector<FuzzConfig> configs;
  for (std::uint64_t seed : {1ull, 2ull}) {
    FuzzConfig config;
    config.seed = seed;
    config.length = 12;
    config.max_bytes = (2u << 20) + 4096;
    config.concurrent_max_bytes = 1u << 20;
    config.max_spin_us = 500;
    configs.push_back(config);
  }
  return configs;
}

std::vector<FuzzConfig> et_regression_seed_set() {
  std::vector<FuzzConfig> configs;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    FuzzConfig config;
    config.leg = Leg::kExecuTorch;
    config.seed = seed;
    config.length = 20;
    config.max_bytes = 4u << 20;
    config.concurrent_max_bytes = 1u << 20;
    configs.push_back(config);
  }
  return configs;
}

std::vector<FuzzConfig> et_sanitizer_seed_set() {
  FuzzConfig config;
  config.leg = Leg::kExecuTorch;
  config.seed = 1;
  config.length = 8;
  config.max_bytes = (1u << 20) + 4096;
  config.concurrent_max_bytes = 256u << 10;
  return {config};
}

}  // namespace trtet_test::fuzz
