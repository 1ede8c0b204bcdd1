// The fixed seeds scripts/gpu-test runs (ctest ContractFuzzGpu.SessionSeedSet), and the smaller
// set it runs under compute-sanitizer (10-100x slower).
#pragma once

#include <vector>

#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

/// 16 seeds x 30 steps, tensors up to 64 MiB (aimed at well under 3 minutes on an H200).
std::vector<FuzzConfig> regression_seed_set();
/// 2 seeds x 12 steps, tensors up to 2 MiB + 4 KiB (still three pageable chunks), spins <= 500 us.
std::vector<FuzzConfig> sanitizer_seed_set();

}  // namespace trtet_test::fuzz
