// Session paths that need no GPU: engine metadata checks of initialize(), state checks of execute(),
// destroy() idempotence, and kNoDevice where there is no GPU.
#include "delegate/session.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "common/gpu.h"
#include "engines/fake_engine.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using trtet_test::FakeEngine;
using trtet_test::input_desc;
using trtet_test::output_desc;

static_assert(!std::is_copy_constructible_v<Session>, "a session owns GPU resources");
static_assert(!std::is_move_constructible_v<Session>, "the runtime's handle points at the session");

void expect_program_error(std::unique_ptr<engine::Engine> engine, const char* fragment) {
  Session session(std::move(engine));
  Status status = session.initialize();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidProgram) << status.to_string();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
}

TEST(SessionCpu, RejectsEngineWithoutBindings) {
  expect_program_error(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{}), "no bindings");
}

TEST(SessionCpu, RejectsStagingSlotsOutsideOneToFour) {
  for (const int slots : {0, -1, 5}) {
    SessionOptions options;
    options.staging_slots = slots;
    Session session(FakeEngine::elementwise(Shape{1}, Shape{8}), options);
    const Status status = session.initialize();
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << slots << ": " << status.to_string();
    EXPECT_NE(status.message().find("staging_slots"), std::string::npos) << status.message();
  }
}

TEST(SessionCpu, RejectsProfileOfDifferentRanks) {
  expect_program_error(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{
                           input_desc("x", Shape{1, 4}, Shape{8}), output_desc("out", 1)}),
                       "differ in rank");
}

TEST(SessionCpu, RejectsProfileMinAboveMax) {
  expect_program_error(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{
                           input_desc("x", Shape{9}, Shape{8}), output_desc("out", 1)}),
                       "exceeds maximum");
}

TEST(SessionCpu, RejectsAliasFromAnInput) {
  expect_program_error(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{0, 0, engine::AliasKind::kUser}}),
                       "as an output");
}

TEST(SessionCpu, RejectsAliasToAnOutput) {
  expect_program_error(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{1, 1, engine::AliasKind::kKvCacheUpdate}}),
                       "as an input");
}

TEST(SessionCpu, RejectsAliasOutOfRange) {
  expect_program_error(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{5, 0, engine::AliasKind::kKvCacheUpdate}}),
                       "binding 5");
}

TEST(SessionCpu, RejectsAliasAcrossDtypes) {
  expect_program_error(
      std::make_unique<FakeEngine>(
          std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1, DataType::kFloat16)},
          std::vector<engine::Alias>{engine::Alias{1, 0, engine::AliasKind::kKvCacheUpdate}}),
      "differ in dtype");
}

TEST(SessionCpu, NullEngineIsInvalidState) {
  Session session(nullptr);
  EXPECT_EQ(session.initialize().code(), ErrorCode::kInvalidState);
  EXPECT_EQ(session.execute(nullptr, 0).code(), ErrorCode::kInvalidState);
  session.destroy();
}

TEST(SessionCpu, ExecuteBeforeInitializeIsInvalidStateAndEnqueuesNothing) {
  auto engine = FakeEngine::elementwise(Shape{1}, Shape{8});
  FakeEngine* fake = engine.get();
  Session session(std::move(engine));
  TensorView args[3];
  Status status = session.execute(args, 3);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidState) << status.to_string();
  EXPECT_TRUE(fake->calls().empty());
  EXPECT_EQ(session.stats().calls, 0u);
}

TEST(SessionCpu, DestroyTwiceThenExecuteIsInvalidState) {
  Session session(FakeEngine::elementwise(Shape{1}, Shape{8}));
  session.destroy();
  session.destroy();
  TensorView args[3];
  EXPECT_EQ(session.execute(args, 3).code(), ErrorCode::kInvalidState);
  EXPECT_EQ(session.initialize().code(), ErrorCode::kInvalidState);
}

TEST(SessionCpu, InitializeWithoutGpuIsNoDevice) {
  if (trtet_test::no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: covered by the GPU suite";
  Session session(FakeEngine::elementwise(Shape{1}, Shape{8}));
  Status status = session.initialize();
  EXPECT_EQ(status.code(), ErrorCode::kNoDevice) << status.to_string();
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
