// CPU tests of choosing an optimization profile (session/checks.h: choose_profile, check_arguments)
// with the host-only FakeEngine given several profiles.
#include <gtest/gtest.h>

#include <cstring>

#include "common/error_match.h"
#include "common/gpu.h"
#include "session/checks.h"
#include "engines/fake_engine.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using trtet_test::FakeEngine;

class Profiles : public ::testing::Test {
 protected:
  void SetUp() override {
    // Profile 0: [1..16] x 4; profile 1: [17..256] x 4; profile 2: [1..256] x 4 (holds both).
    engine_ = FakeEngine::elementwise(Shape{1, 4}, Shape{16, 4});
    engine_->add_profile(Shape{17, 4}, Shape{256, 4});
    engine_->add_profile(Shape{1, 4}, Shape{256, 4});
    for (int i = 0; i < 3; ++i) {
      args_[i].data = storage_[i];
      args_[i].capacity_bytes = sizeof(storage_[i]);
      args_[i].dtype = DataType::kFloat32;
    }
  }
  void shape_inputs(const Shape& x, const Shape& y) {
    args_[0].shape = x;
    args_[1].shape = y;
    args_[2].shape = x;
  }
  std::unique_ptr<FakeEngine> engine_;
  alignas(256) float storage_[3][1024]{};
  TensorView args_[3];
};

TEST_F(Profiles, TheTightestProfileThatHoldsTheShapesIsChosen) {
  shape_inputs(Shape{8, 4}, Shape{8, 4});
  EXPECT_EQ(*choose_profile(*engine_, args_), 0);  // 0 and 2 hold it; 0 is tighter
  shape_inputs(Shape{100, 4}, Shape{100, 4});
  EXPECT_EQ(*choose_profile(*engine_, args_), 1);  // 1 and 2 hold it; 1 is tighter
  shape_inputs(Shape{16, 4}, Shape{17, 4});
  EXPECT_EQ(*choose_profile(*engine_, args_), 2);  // only 2 holds both inputs at once
}

TEST_F(Profiles, CheckArgumentsReturnsTheProfileItCheckedAgainst) {
  shape_inputs(Shape{100, 4}, Shape{100, 4});
  auto profile = check_arguments(*engine_, args_, 3);
  TRTET_ASSERT_OK(profile);
  EXPECT_EQ(*profile, 1);
}

TEST_F(Profiles, ShapesThatFitNoProfileNameEveryProfilesBounds) {
  shape_inputs(Shape{300, 4}, Shape{300, 4});
  auto profile = check_arguments(*engine_, args_, 3);
  ASSERT_FALSE(profile.ok());
  const Status& status = profile.status();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  for (const char* fragment : {"fit none of the engine's 3 optimization profiles", "x [300, 4]",
                               "profile 0: x [1, 4]..[16, 4]", "profile 1: x [17, 4]..[256, 4]",
                               "profile 2: x [1, 4]..[256, 4]"}) {
    TRTET_EXPECT_ERROR_SAYS(status, fragment);
  }
}

TEST_F(Profiles, RankIsCheckedBeforeProfiles) {
  shape_inputs(Shape{8}, Shape{8, 4});
  auto profile = choose_profile(*engine_, args_);
  ASSERT_FALSE(profile.ok());
  TRTET_EXPECT_ERROR_SAYS(profile, "has rank 1");
}

TEST_F(Profiles, ASingleProfileEngineKeepsItsDimensionMessage) {
  auto single = FakeEngine::elementwise(Shape{1, 4}, Shape{16, 4});
  shape_inputs(Shape{300, 4}, Shape{8, 4});
  auto profile = check_arguments(*single, args_, 3);
  ASSERT_FALSE(profile.ok());
  TRTET_EXPECT_ERROR_SAYS(profile, "dimension 0 = 300 is outside the engine's profile [1, 4]..[16, 4]");
}

TEST_F(Profiles, CapacityIsCheckedAgainstTheChosenProfilesShape) {
  shape_inputs(Shape{256, 4}, Shape{256, 4});
  args_[1].capacity_bytes = 256 * 4 * sizeof(float) - 1;
  auto profile = check_arguments(*engine_, args_, 3);
  ASSERT_FALSE(profile.ok());
  TRTET_EXPECT_ERROR_SAYS(profile, "holds 4095 bytes");
}

TEST(FakeEngineProfiles, SelectProfileGovernsSetInputShape) {
  auto engine = FakeEngine::elementwise(Shape{1, 4}, Shape{16, 4});
  engine->add_profile(Shape{17, 4}, Shape{256, 4});
  EXPECT_EQ(engine->profile_count(), 2);
  EXPECT_FALSE(engine->set_input_shape(0, Shape{100, 4}).ok());  // profile 0 selected
  TRTET_ASSERT_OK(engine->select_profile(1, nullptr));
  TRTET_EXPECT_OK(engine->set_input_shape(0, Shape{100, 4}));
  EXPECT_FALSE(engine->set_input_shape(0, Shape{8, 4}).ok());
  EXPECT_FALSE(engine->select_profile(2, nullptr).ok());
  EXPECT_EQ(engine->selected_profile(), 1);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
