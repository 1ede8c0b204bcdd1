// blob/weight_streaming_budget.h: the budget value from a compile-spec byte range or a load-time
// option (string or int).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "blob/weight_streaming_budget.h"
#include "common/gpu.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

TEST(WeightStreamingBudget, KeyMatchesTorchTensorRt) { EXPECT_EQ(kWeightStreamingBudgetKey, "weight_streaming_budget"); }

TEST(WeightStreamingBudget, AcceptsDecimalByteCounts) {
  const std::pair<std::string_view, uint64_t> cases[] = {
      {"0", 0},
      {"1", 1},
      {"4096", 4096},
      {"8589934592", 8589934592ull},
      {"007", 7},
      {"9223372036854775807", kInt64Max},
  };
  for (const auto& [text, expected] : cases) {
    auto budget = parse_weight_streaming_budget(text);
    TRTET_ASSERT_OK(budget);
    EXPECT_EQ(*budget, expected) << text;
  }
}

TEST(WeightStreamingBudget, ReadsOnlyTheGivenBytes) {
  // A compile-spec value is a byte range with no terminator: the bytes after it are not read.
  const char buffer[] = "12345garbage";
  auto budget = parse_weight_streaming_budget(std::string_view(buffer, 5));
  TRTET_ASSERT_OK(budget);
  EXPECT_EQ(*budget, 12345u);
}

struct Rejected {
  std::string_view text;
  std::string fragment;
};

TEST(WeightStreamingBudget, RejectsMalformedText) {
  const Rejected cases[] = {
      {"", "is empty"},
      {"-1", "\"-1\" is negative"},
      {"-0", "is negative"},
      {"+5", "\"+5\" is not a decimal number"},
      {" 5", "is not a decimal number"},
      {"auto", "\"auto\" is not a decimal number"},
      {"0x10", "\"0x10\" has trailing characters"},
      {"5 ", "has trailing characters"},
      {"12abc", "\"12abc\" has trailing characters"},
      {"1.5", "has trailing characters"},
      {"1e9", "has trailing characters"},
      {std::string_view("12\0", 3), "\"12\\x00\" has trailing characters"},
      {"9223372036854775808", "overflows"},
      {"18446744073709551616", "overflows"},
      {"99999999999999999999999999999", "overflows"},
  };
  for (const Rejected& c : cases) {
    auto budget = parse_weight_streaming_budget(c.text);
    ASSERT_FALSE(budget.ok()) << "accepted \"" << c.text << "\"";
    EXPECT_EQ(budget.status().code(), ErrorCode::kInvalidProgram);
    EXPECT_NE(budget.status().message().find(c.fragment), std::string::npos) << budget.status().message();
    EXPECT_NE(budget.status().message().find("compile spec"), std::string::npos) << budget.status().message();
  }
}

TEST(WeightStreamingBudget, LoadTimeStringOptionIsAnInvalidArgument) {
  auto budget = parse_weight_streaming_budget("-4096", BudgetSource::kLoadOption);
  ASSERT_FALSE(budget.ok());
  EXPECT_EQ(budget.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(budget.status().message().find("load-time option \"-4096\" is negative"), std::string::npos)
      << budget.status().message();
  auto good = parse_weight_streaming_budget("4096", BudgetSource::kLoadOption);
  TRTET_ASSERT_OK(good);
  EXPECT_EQ(*good, 4096u);
}

TEST(WeightStreamingBudget, LongValuesAreShortenedInMessages) {
  const std::string text = std::string(100, '1') + "x";
  auto budget = parse_weight_streaming_budget(text);
  ASSERT_FALSE(budget.ok());
  EXPECT_NE(budget.status().message().find("...\""), std::string::npos) << budget.status().message();
}

TEST(WeightStreamingBudget, IntegerOption) {
  auto zero = parse_weight_streaming_budget(int64_t{0});
  TRTET_ASSERT_OK(zero);
  EXPECT_EQ(*zero, 0u);
  auto big = parse_weight_streaming_budget(std::numeric_limits<int64_t>::max());
  TRTET_ASSERT_OK(big);
  EXPECT_EQ(*big, kInt64Max);
  auto small = parse_weight_streaming_budget(1 << 20);  // an int option converts to int64
  TRTET_ASSERT_OK(small);
  EXPECT_EQ(*small, 1u << 20);
  auto negative = parse_weight_streaming_budget(int64_t{-1});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(negative.status().message().find("load-time option -1 is negative"), std::string::npos);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::blob
