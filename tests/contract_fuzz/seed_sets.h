// The fixed seeds scripts/gpu test runs (ctest ContractFuzzGpu.SessionSeedSet and, where the
// executorch leg is built, ContractFuzzGpu.ExecuTorchSeedSet), and the smaller sets it runs under
// compute-sanitizer (10-100x slower).
#pragma once

#include <vector>

#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

/// 16 seeds x 30 steps, tensors up to 64 MiB (aimed at well under 3 minutes on an H200).
std::vector<FuzzConfig> regression_seed_set();
/// 2 seeds x 12 steps, tensors up to 2 MiB + 4 KiB (still three pageable chunks), spins <= 500 us.
std::vector<FuzzConfig> sanitizer_seed_set();

/// The executorch leg: 8 seeds x 20 steps, tensors up to 4 MiB (the programs' bound; threads 1 MiB),
/// aimed at well under 60 s on an H200.
std::vector<FuzzConfig> et_regression_seed_set();
/// The executorch leg under compute-sanitizer: 1 seed x 8 steps, tensors up to 1 MiB + 4 KiB.
std::vector<FuzzConfig> et_sanitizer_seed_set();

}  // namespace trtet_test::fuzz
