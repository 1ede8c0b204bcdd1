// Shrinking a failing sequence: delete steps (halves, then quarters, ... then single steps) and
// keep each deletion after which the failure still reproduces.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace trtet_test::fuzz {

/// The shortest subsequence of `steps` found before `deadline` for which `still_fails` holds
/// (`steps` itself when none shorter does). `trials` counts the calls of `still_fails`.
std::vector<std::size_t> shrink_steps(std::vector<std::size_t> steps,
                                      const std::function<bool(const std::vector<std::size_t>&)>& still_fails,
                                      std::chrono::steady_clock::time_point deadline, int* trials);

}  // namespace trtet_test::fuzz
