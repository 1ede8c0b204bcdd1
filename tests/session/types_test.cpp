// Shape and DataType helpers (engine/types.h) and MemoryKind helpers, without a GPU.
#include "engine/types.h"

#include <gtest/gtest.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "session/memory_kind.h"

namespace torch_tensorrt::executorch_backend {
namespace {

TEST(DataType, ElementSizes) {
  EXPECT_EQ(element_size(DataType::kFloat32), 4u);
  EXPECT_EQ(element_size(DataType::kFloat16), 2u);
  EXPECT_EQ(element_size(DataType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DataType::kFloat64), 8u);
  EXPECT_EQ(element_size(DataType::kInt8), 1u);
  EXPECT_EQ(element_size(DataType::kUInt8), 1u);
  EXPECT_EQ(element_size(DataType::kInt32), 4u);
  EXPECT_EQ(element_size(DataType::kInt64), 8u);
  EXPECT_EQ(element_size(DataType::kBool), 1u);
  EXPECT_EQ(element_size(DataType::kFloat8E4M3), 1u);
}

TEST(DataType, NamesRoundTrip) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
                     DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kBool, DataType::kFloat8E4M3}) {
    auto parsed = parse_data_type(to_string(t));
    TRTET_ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, t) << to_string(t);
  }
}

TEST(DataType, TorchSpellingsAndCase) {
  EXPECT_EQ(*parse_data_type("torch.float32"), DataType::kFloat32);
  EXPECT_EQ(*parse_data_type("Half"), DataType::kFloat16);
  EXPECT_EQ(*parse_data_type("BF16"), DataType::kBFloat16);
  EXPECT_EQ(*parse_data_type("torch.long"), DataType::kInt64);
  auto bad = parse_data_type("complex64");
  ASSERT_FALSE(bad.ok());
  TRTET_EXPECT_ERROR(bad, ErrorCode::kInvalidProgram, "complex64");
}

TEST(Shape, BasicsAndEquality) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(Shape{}.to_string(), "[]");
  EXPECT_EQ((Shape{0, 5}).numel(), 0);
  EXPECT_EQ(s, (Shape{2, 3, 4}));
  EXPECT_NE(s, (Shape{2, 3}));
  EXPECT_NE(s, (Shape{2, 3, 5}));
  EXPECT_NE(Shape{}, (Shape{1}));
}

TEST(Shape, FromChecksRankAndSign) {
  const std::int64_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto ok = Shape::from(dims, 8);
  TRTET_ASSERT_OK(ok);
  EXPECT_EQ(ok->rank, 8);
  EXPECT_EQ((*ok)[7], 8);
  auto too_long = Shape::from(dims, 9);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), ErrorCode::kInvalidArgument);
  const std::int64_t negative[] = {2, -1};
  auto neg = Shape::from(negative, 2);
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), ErrorCode::kInvalidArgument);
  auto empty = Shape::from(nullptr, 0);
  TRTET_ASSERT_OK(empty);
  EXPECT_EQ(empty->rank, 0);
}

TEST(MemoryKind, DeviceAccessibleKindsAndNames) {
  using delegate::MemoryKind;
  EXPECT_TRUE(delegate::is_device_accessible(MemoryKind::kDevice));
  EXPECT_TRUE(delegate::is_device_accessible(MemoryKind::kManaged));
  EXPECT_FALSE(delegate::is_device_accessible(MemoryKind::kPinnedHost));
  EXPECT_FALSE(delegate::is_device_accessible(MemoryKind::kPageableHost));
  EXPECT_STREQ(delegate::to_string(MemoryKind::kPageableHost), "pageable host");
  EXPECT_STREQ(delegate::to_string(MemoryKind::kPinnedHost), "pinned host");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
