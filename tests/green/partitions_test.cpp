// The public partitions API (GreenContext.h) on the CPU: empty owners, moves, argument errors
// reported before any device is touched, and the result type. With a GPU the device-dependent
// errors are checked too (partitions_gpu_test.cpp covers confinement).
#include <torch_tensorrt/executorch/GreenContext.h>

#include <gtest/gtest.h>

#include <type_traits>

#include "common/error_match.h"
#include "common/gpu.h"

namespace et = torch_tensorrt::executorch_backend;

namespace {

static_assert(!std::is_copy_constructible_v<et::GreenContext>, "one owner per green context");
static_assert(!std::is_copy_assignable_v<et::GreenContext>, "one owner per green context");
static_assert(std::is_nothrow_move_constructible_v<et::GreenContext>, "moves never throw");
static_assert(std::is_nothrow_move_assignable_v<et::GreenContext>, "moves never throw");
static_assert(std::is_nothrow_destructible_v<et::GreenContext>, "destruction never throws");
// The partitions API speaks the one public vocabulary (Error.h); its older names are the same types.
static_assert(std::is_same_v<et::GreenContextError, et::Error>);
static_assert(std::is_same_v<et::GreenContextErrc, et::ErrorCode>);
static_assert(std::is_same_v<et::GreenContextResult<int>, et::Result<int>>);
static_assert(std::is_same_v<decltype(et::split_device(0, {})), et::Result<std::vector<et::GreenContext>>>);
static_assert(std::is_same_v<decltype(et::green_context_limits(0)), et::Result<et::GreenContextLimits>>);

TEST(Partitions, AnEmptyGreenContextOwnsNothing) {
  et::GreenContext empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.device(), -1);
  EXPECT_EQ(empty.sm_count(), 0u);
  EXPECT_EQ(empty.requested_sms(), 0u);
  EXPECT_FALSE(empty.is_remainder());
  EXPECT_EQ(empty.stream(), nullptr);
  EXPECT_TRUE(empty.streams().empty());
  EXPECT_EQ(empty.handle(), nullptr);
  empty.reset();  // no-op
  EXPECT_FALSE(empty);
}

TEST(Partitions, MakeStreamOnAnEmptyGreenContextIsInvalidState) {
  et::GreenContext empty;
  auto stream = empty.make_stream();
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code(), et::GreenContextErrc::kInvalidState);
  TRTET_EXPECT_ERROR_SAYS(stream.error(), "empty GreenContext");
}

TEST(Partitions, MovingAnEmptyGreenContextLeavesBothEmpty) {
  et::GreenContext a;
  et::GreenContext b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_FALSE(b);
  a = std::move(b);
  EXPECT_FALSE(a);
}

// Argument errors need no device: the same answer with or without a GPU.
TEST(Partitions, NoCountsIsRejectedBeforeTheDevice) {
  auto split = et::split_device(0, {});
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code(), et::GreenContextErrc::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(split.error(), "needs SM counts");
}

TEST(Partitions, AZeroSmPartitionIsRejectedBeforeTheDevice) {
  auto split = et::split_device(0, {16, 0}, et::Remainder::kKeep);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code(), et::GreenContextErrc::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(split.error(), "partition 1 asks for 0 SMs");
}

TEST(Partitions, ABadDeviceIndexIsReportedAsSuch) {
  auto split = et::split_device(-1, {16});
  ASSERT_FALSE(split.ok());
  if (trtet_test::no_gpu_reason().empty()) {
    EXPECT_EQ(split.error().code(), et::GreenContextErrc::kInvalidArgument) << split.error().message();
  } else {
    // Without a GPU the device check itself reports the missing device.
    EXPECT_TRUE(split.error().code() == et::GreenContextErrc::kNoDevice ||
                split.error().code() == et::GreenContextErrc::kInvalidArgument)
        << split.error().message();
  }
  EXPECT_FALSE(split.error().message().empty());
}

TEST(Partitions, WithoutAGpuLimitsAndSplitsSayNoDevice) {
  if (trtet_test::no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable";
  auto limits = et::green_context_limits(0);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.error().code(), et::GreenContextErrc::kNoDevice) << limits.error().message();
  auto split = et::split_device(0, {32}, et::Remainder::kKeep);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code(), et::GreenContextErrc::kNoDevice) << split.error().message();
  EXPECT_EQ(split.error().limits().device, -1) << "no limits could be read";
}

TEST(Partitions, ResultHoldsAValueOrAnError) {
  et::GreenContextResult<int> value(7);
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(static_cast<bool>(value));
  EXPECT_EQ(*value, 7);
  et::GreenContextLimits limits;
  limits.device = 0;
  limits.granularity = 8;
  et::GreenContextResult<int> error(
      et::GreenContextError(et::GreenContextErrc::kInvalidArgument, "no", limits, std::vector<unsigned>{32}));
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().message(), "no");
  EXPECT_EQ(error.error().limits().granularity, 8u);
  EXPECT_EQ(error.error().closest_valid(), std::vector<unsigned>{32});
}

}  // namespace
