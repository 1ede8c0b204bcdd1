#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

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


// ---- the public vocabulary (torch_tensorrt/executorch/Error.h) is the internal one ----

static_assert(std::is_same_v<Status, Error>, "Status is the public Error, not a second type");
static_assert(std::is_same_v<decltype(std::declval<Result<int>>().error()), const Error&>);

TEST(Error, CarriesSplitDetailsOnlyWhenGiven) {
  const Error plain(ErrorCode::kInvalidArgument, "no");
  EXPECT_EQ(plain.limits().device, -1);
  EXPECT_TRUE(plain.closest_valid().empty());

  GreenContextLimits limits;
  limits.device = 0;
  limits.granularity = 8;
  const Error split(ErrorCode::kInvalidArgument, "30 is not a multiple of 8", limits, {32});
  const Error copy = split;  // the details are shared, not lost
  EXPECT_EQ(copy.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(copy.message(), "30 is not a multiple of 8");
  EXPECT_EQ(copy.limits().granularity, 8u);
  EXPECT_EQ(copy.closest_valid(), std::vector<unsigned>{32});
  EXPECT_EQ(copy.to_string(), "InvalidArgument: 30 is not a multiple of 8");
  EXPECT_TRUE(copy.has_split_details());
  EXPECT_FALSE(plain.has_split_details());

  // Only a refused request carries them: a driver failure on the same device does not.
  const Error internal(ErrorCode::kInternal, "the driver failed", limits, {32});
  EXPECT_FALSE(internal.has_split_details());
  EXPECT_EQ(internal.limits().device, -1);
  EXPECT_TRUE(internal.closest_valid().empty());
}

TEST(Result, ErrorIsOkWhileAValueIsHeld) {
  Result<int> good(3);
  EXPECT_TRUE(good.error().ok());
  Result<int> bad(Error(ErrorCode::kNoDevice, "no GPU"));
  EXPECT_EQ(bad.error().code(), ErrorCode::kNoDevice);
  EXPECT_EQ(bad.error().message(), "no GPU");
  EXPECT_EQ(bad.status().code(), ErrorCode::kNoDevice);
}

TEST(ErrorCode, NamesAreStable) {
  EXPECT_STREQ(to_string(ErrorCode::kOk), "Ok");
  EXPECT_STREQ(to_string(ErrorCode::kInvalidArgument), "InvalidArgument");
  EXPECT_STREQ(to_string(ErrorCode::kNoDevice), "NoDevice");
  EXPECT_STREQ(to_string(static_cast<ErrorCode>(200)), "Unknown");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
