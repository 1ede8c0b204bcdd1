// The shrinker: the smallest failing set of steps, and what it has when its deadline comes.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "contract_fuzz/shrink.h"

namespace trtet_test::fuzz {
namespace {

TEST(ContractFuzzShrink, FindsTheTwoStepsThatFail) {
  std::vector<std::size_t> steps;
  for (std::size_t i = 0; i < 40; ++i) steps.push_back(i);
  auto fails = [](const std::vector<std::size_t>& s) {
    bool has3 = false, has29 = false;
    for (std::size_t i : s) {
      has3 = has3 || i == 3;
      has29 = has29 || i == 29;
    }
    return has3 && has29;
  };
  int trials = 0;
  const auto shrunk = shrink_steps(steps, fails, std::chrono::steady_clock::now() + std::chrono::minutes(1), &trials);
  EXPECT_EQ(shrunk, (std::vector<std::size_t>{3, 29}));
  EXPECT_GT(trials, 0);
  EXPECT_LT(trials, 200);
}

TEST(ContractFuzzShrink, StopsAtTheDeadlineWithWhatItHas) {
  std::vector<std::size_t> steps = {0, 1, 2, 3};
  int trials = -1;
  const auto shrunk = shrink_steps(steps, [](const auto&) { return true; }, std::chrono::steady_clock::now(), &trials);
  EXPECT_EQ(shrunk, steps);
  EXPECT_EQ(trials, 0);
}

}  // namespace
}  // namespace trtet_test::fuzz
