// The error-matching helper (common/error_match.h): each way a check fails, with the whole error in
// the failure, and the checks that pass.
#include "common/error_match.h"

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace trtet_test {
namespace {

namespace ex = torch_tensorrt::executorch_backend;
using ex::ErrorCode;

const ex::Status kRefused = ex::make_error(ErrorCode::kInvalidArgument, "input 1 (\"y\") has dtype float16");

TEST(ErrorMatch, AnErrorOfTheCodeSayingEveryPartPasses) {
  EXPECT_TRUE(is_error(kRefused, ErrorCode::kInvalidArgument, "\"y\"", "float16"));
  EXPECT_TRUE(is_error(kRefused, ExpectedCode(), "dtype"));
  EXPECT_TRUE(is_error(ex::Result<int>(kRefused), ErrorCode::kInvalidArgument, std::string("input 1")));
  TRTET_EXPECT_ERROR(kRefused, ErrorCode::kInvalidArgument, "float16") << "context streams as with EXPECT_TRUE";
  TRTET_EXPECT_ERROR_SAYS(kRefused, "input 1", "float16");
  TRTET_EXPECT_ERROR_OMITS(kRefused, "float32");
}

TEST(ErrorMatch, SuccessFails) {
  const auto check = is_error(ex::Status(), ErrorCode::kInvalidArgument, "x");
  EXPECT_FALSE(check);
  EXPECT_EQ(std::string(check.message()), "succeeded; expected InvalidArgument saying \"x\"");
  EXPECT_FALSE(is_error(ex::Result<int>(7), ExpectedCode(), "x"));
}

TEST(ErrorMatch, AnotherCodeFailsShowingTheWholeError) {
  const auto check = is_error(kRefused, ErrorCode::kInvalidProgram, "float16");
  EXPECT_FALSE(check);
  EXPECT_EQ(std::string(check.message()),
            "code InvalidArgument, expected InvalidProgram; the error: " + kRefused.to_string());
}

TEST(ErrorMatch, AMissingPartFailsShowingTheWholeError) {
  const auto check = is_error(kRefused, ErrorCode::kInvalidArgument, "\"y\"", "float32");
  EXPECT_FALSE(check);
  EXPECT_EQ(std::string(check.message()), "the message does not say \"float32\"; the error: " + kRefused.to_string());
}

TEST(ErrorMatch, APartThatIsThereFailsOmits) {
  const auto check = says_nothing_of(kRefused, "float16");
  EXPECT_FALSE(check);
  EXPECT_EQ(std::string(check.message()), "the message says \"float16\"; the error: " + kRefused.to_string());
  EXPECT_TRUE(says_nothing_of(ex::Status(), "anything"));
}

}  // namespace
}  // namespace trtet_test
