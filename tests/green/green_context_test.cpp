// CPU tests of the green layer's types and argument checks: no GPU needed.
#include <gtest/gtest.h>

#include <type_traits>

#include "common/error_match.h"
#include "common/gpu.h"
#include "green/green_context.h"
#include "green/probe.h"
#include "green/split.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {


static_assert(!std::is_copy_constructible_v<GreenContext>, "one owner per green context");
static_assert(!std::is_copy_assignable_v<GreenContext>, "one owner per green context");
static_assert(std::is_nothrow_move_constructible_v<GreenContext>, "moves never fail");
static_assert(std::is_nothrow_move_assignable_v<GreenContext>, "moves never fail");
static_assert(std::is_nothrow_move_constructible_v<Partition>, "partitions move into vectors without copies");

TEST(GreenContextCpu, EmptyOwnsNothing) {
  GreenContext empty;
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
  GreenContext::Released released = empty.release();
  EXPECT_EQ(released.context, nullptr);
  EXPECT_TRUE(released.streams.empty());
  GreenContext moved(std::move(empty));
  EXPECT_FALSE(moved);
  moved.reset();
}

TEST(GreenContextCpu, CreateRejectsNullDescriptor) {
  auto context = GreenContext::create(0, nullptr);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), ErrorCode::kInvalidArgument);
}

TEST(GreenContextCpu, SplitChecksArgumentsBeforeTheDevice) {
  auto zero = split_device(0, SplitRequest::counts({16, 0}));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(zero.status(), "0 SMs");
  auto nothing = split_device(0, SplitRequest{});
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), ErrorCode::kInvalidArgument);
}

TEST(GreenContextCpu, SharedSmsCountsTheIntersection) {
  EXPECT_EQ(shared_sms({0, 2, 4, 6}, {1, 2, 3, 6}), 2u);
  EXPECT_EQ(shared_sms({0, 1}, {2, 3}), 0u);
  EXPECT_EQ(shared_sms({}, {1}), 0u);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::green
