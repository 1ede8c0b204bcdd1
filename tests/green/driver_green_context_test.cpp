// CPU tests of the green layer's types (DriverGreenContext, Partition) and argument checks: no GPU needed.
#include <gtest/gtest.h>

#include <type_traits>

#include "common/error_match.h"
#include "common/gpu.h"
#include "green/driver_green_context.h"
#include "green/probe.h"
#include "green/split.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {


static_assert(!std::is_copy_constructible_v<DriverGreenContext>, "one owner per green context");
static_assert(!std::is_copy_assignable_v<DriverGreenContext>, "one owner per green context");
static_assert(std::is_nothrow_move_constructible_v<DriverGreenContext>, "moves never fail");
static_assert(std::is_nothrow_move_assignable_v<DriverGreenContext>, "moves never fail");
static_assert(std::is_nothrow_move_constructible_v<Partition>, "partitions move into vectors without copies");

TEST(DriverGreenContextCpu, EmptyOwnsNothing) {
  DriverGreenContext empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.get(), nullptr);
  EXPECT_EQ(empty.sm_count(), 0u);
  EXPECT_EQ(empty.device(), -1);
  EXPECT_TRUE(empty.streams().empty());
  auto stream = empty.make_stream();
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().code(), ErrorCode::kInvalidState);
  auto context = empty.as_context();
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), ErrorCode::kInvalidState);
  EXPECT_EQ(empty.destroy_stream(nullptr).code(), ErrorCode::kNotFound);
  DriverGreenContext::Released released = empty.release();
  EXPECT_EQ(released.context, nullptr);
  EXPECT_TRUE(released.streams.empty());
  DriverGreenContext moved(std::move(empty));
  EXPECT_FALSE(moved);
  moved.reset();
}

TEST(DriverGreenContextCpu, CreateRejectsNullDescriptor) {
  auto context = DriverGreenContext::create(0, nullptr);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), ErrorCode::kInvalidArgument);
}

TEST(DriverGreenContextCpu, SplitChecksArgumentsBeforeTheDevice) {
  auto zero = split_device(0, SplitRequest::counts({16, 0}));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(zero.status(), "0 SMs");
  auto nothing = split_device(0, SplitRequest{});
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), ErrorCode::kInvalidArgument);
}

TEST(DriverGreenContextCpu, SharedSmsCountsTheIntersection) {
  EXPECT_EQ(shared_sms({0, 2, 4, 6}, {1, 2, 3, 6}), 2u);
  EXPECT_EQ(shared_sms({0, 1}, {2, 3}), 0u);
  EXPECT_EQ(shared_sms({}, {1}), 0u);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::green
