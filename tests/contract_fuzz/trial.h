// One shrink trial in a fresh process (this binary with --trial): a failure that corrupts the CUDA
// context, crashes or hangs cannot spoil the next trial or the fuzzer's own process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "contract_fuzz/oracle.h"
#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

/// Exit status of a --trial run whose sequence broke a promise of `category`; 0 when it passed.
constexpr int kTrialExitBase = 10;

/// Runs `self` --trial with `config` and `keep`; the category of the failure it reproduced, or
/// nothing when it passed (or could not run). A crash or a run past `timeout_s` is kCrashOrHang.
std::optional<Category> run_trial(const std::string& self, const FuzzConfig& config,
                                  const std::vector<std::size_t>& keep, double timeout_s);

}  // namespace trtet_test::fuzz
