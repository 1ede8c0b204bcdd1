#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace torch_tensorrt::executorch_backend {
namespace {

Status fails_when(bool fail) {
  TRTET_CHECK_OR_RETURN(!fail, kInvalidArgument, "asked to fail with %d", 42);
  return Status::Ok();
}

Result<int> twice(Result<int> in) {
  TRTET_ASSIGN_OR_RETURN(const int v, std::move(in));
  return 2 * v;
}

Status propagates(bool fail) {
  TRTET_RETURN_IF_ERROR(fails_when(fail));
  return make_error(ErrorCode::kInternal, "reached the end");
}

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.to_string(), "Ok");
}

TEST(Status, CheckOrReturnFormatsMessage) {
  Status s = fails_when(true);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "asked to fail with 42");
  EXPECT_EQ(s.to_string(), "InvalidArgument: asked to fail with 42");
  EXPECT_TRUE(fails_when(false).ok());
}

TEST(Status, ReturnIfErrorPropagatesFirstError) {
  EXPECT_EQ(propagates(true).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(propagates(false).code(), ErrorCode::kInternal);
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = twice(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  Result<int> bad = twice(make_error(ErrorCode::kInvalidProgram, "bad"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidProgram);
  EXPECT_EQ(bad.status().message(), "bad");
}

TEST(Result, OkStatusWithoutValueBecomesInternalError) {
  Result<int> r{Status::Ok()};
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(ErrorCode, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::kInvalidState); ++c) {
    EXPECT_STRNE(to_string(static_cast<ErrorCode>(c)), "Unknown") << c;
  }
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
