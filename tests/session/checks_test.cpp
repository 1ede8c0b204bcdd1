// Argument checks (session/checks.h) against a FakeEngine, without a GPU.
#include "session/checks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "engines/fake_engine.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using trtet_test::FakeEngine;

class Checks : public ::testing::Test {
 protected:
  // x, y in [1x4, 64x4096] -> out; args of shape [2, 4] with room for exactly that.
  void SetUp() override {
    engine_ = FakeEngine::elementwise(Shape{1, 4}, Shape{64, 4096});
    for (int i = 0; i < 3; ++i) {
      args_[i].data = storage_[i];
      args_[i].capacity_bytes = 8 * sizeof(float);
      args_[i].shape = Shape{2, 4};
      args_[i].dtype = DataType::kFloat32;
    }
  }
  void expect_arguments_refused(const char* fragment, std::size_t count = 3) {
    Status status = check_arguments(*engine_, args_, count).status();
    TRTET_EXPECT_ERROR(status, ErrorCode::kInvalidArgument, fragment);
  }
  std::unique_ptr<FakeEngine> engine_;
  alignas(256) float storage_[3][64]{};
  TensorView args_[4];
};

TEST_F(Checks, GoodArgumentsPass) { TRTET_EXPECT_OK(check_arguments(*engine_, args_, 3)); }

TEST_F(Checks, ArgumentCount) {
  expect_arguments_refused("got 2 arguments", 2);
  expect_arguments_refused("got 4 arguments", 4);
  expect_arguments_refused("got 0 arguments", 0);
}

TEST_F(Checks, InputDtype) {
  args_[1].dtype = DataType::kFloat16;
  expect_arguments_refused("input 1 (\"y\") has dtype float16");
}

TEST_F(Checks, OutputDtype) {
  args_[2].dtype = DataType::kInt32;
  expect_arguments_refused("output 2 (\"out\") has dtype int32");
}

TEST_F(Checks, Rank) {
  args_[0].shape = Shape{8};
  expect_arguments_refused("rank 1");
  args_[0].shape = Shape{1, 2, 4};
  expect_arguments_refused("rank 3");
}

TEST_F(Checks, ProfileBounds) {
  args_[0].shape = Shape{0, 4};  // below min
  args_[0].capacity_bytes = 0;
  expect_arguments_refused("outside the engine's profile");
  args_[0].shape = Shape{65, 4};  // above max
  args_[0].capacity_bytes = 65 * 4 * sizeof(float);
  expect_arguments_refused("dimension 0 = 65");
  args_[0].shape = Shape{2, 4097};
  args_[0].capacity_bytes = 2 * 4097 * sizeof(float);
  expect_arguments_refused("dimension 1 = 4097");
  args_[0].shape = Shape{64, 4096};  // max itself is inside
  args_[0].capacity_bytes = 64 * 4096 * sizeof(float);
  args_[1] = args_[0];
  TRTET_EXPECT_OK(check_arguments(*engine_, args_, 3));
  args_[0].shape = Shape{1, 4};  // min itself is inside
  TRTET_EXPECT_OK(check_input(engine_->io(0), args_[0], 0));
}

TEST_F(Checks, InputCapacity) {
  args_[0].capacity_bytes = 8 * sizeof(float) - 1;
  expect_arguments_refused("holds 31 bytes");
}

TEST_F(Checks, NullInputData) {
  args_[1].data = nullptr;
  expect_arguments_refused("input 1 (\"y\") has no data pointer");
}

TEST_F(Checks, ZeroSizeInputMayHaveNoData) {
  auto engine = FakeEngine::elementwise(Shape{0, 4}, Shape{8, 4});
  args_[0].shape = Shape{0, 4};
  args_[0].data = nullptr;
  args_[0].capacity_bytes = 0;
  TRTET_EXPECT_OK(check_input(engine->io(0), args_[0], 0));
}

TEST_F(Checks, OutputsAreNotShapeCheckedHere) {
  // Output shapes come from the engine after shape inference; only the dtype is checked up front.
  args_[2].shape = Shape{7};
  args_[2].capacity_bytes = 0;
  TRTET_EXPECT_OK(check_arguments(*engine_, args_, 3));
}

TEST(ByteSize, ElementsTimesElementSize) {
  EXPECT_EQ(byte_size(Shape{2, 3}, DataType::kFloat32), 24u);
  EXPECT_EQ(byte_size(Shape{2, 3}, DataType::kFloat16), 12u);
  EXPECT_EQ(byte_size(Shape{0, 3}, DataType::kInt64), 0u);
  EXPECT_EQ(byte_size(Shape{}, DataType::kFloat64), 8u);  // rank 0: one element
}

// ---- what a session checks of its engine at initialize (check_engine_metadata; aliases: aliases_test.cpp) ----

engine::IoDesc io_desc(const char* name, bool is_input, DataType dtype = DataType::kFloat32) {
  engine::IoDesc io;
  io.name = name;
  io.is_input = is_input;
  io.dtype = dtype;
  io.min_shape = Shape{1, 4};
  io.max_shape = Shape{8, 4};
  return io;
}

TEST(EngineMetadata, AnElementwiseEnginePasses) {
  auto engine = FakeEngine::elementwise(Shape{1, 4}, Shape{64, 4096});
  TRTET_EXPECT_OK(check_engine_metadata(*engine));
}

TEST(EngineMetadata, NoBindingsIsAnInvalidProgram) {
  FakeEngine engine({});
  EXPECT_EQ(check_engine_metadata(engine).code(), ErrorCode::kInvalidProgram);
}

TEST(EngineMetadata, AMinimumAboveItsMaximumIsAnInvalidProgram) {
  auto bad = io_desc("x", true);
  bad.min_shape = Shape{9, 4};
  FakeEngine engine({bad, io_desc("out", false)});
  const Status status = check_engine_metadata(engine);
  TRTET_EXPECT_ERROR(status, ErrorCode::kInvalidProgram, "exceeds maximum");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
