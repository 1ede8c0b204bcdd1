// Session paths that need no GPU: engine metadata checks of initialize(), state checks of execute(),
// destroy() idempotence, and kNoDevice where there is no GPU.
#include "session/session.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "common/error_match.h"
#include "common/gpu.h"
#include "engines/fake_engine.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using trtet_test::FakeEngine;
using trtet_test::input_desc;
using trtet_test::output_desc;

static_assert(!std::is_copy_constructible_v<Session>, "a session owns GPU resources");
static_assert(!std::is_move_constructible_v<Session>, "the runtime's handle points at the session");

/// What initialize() of a session of `engine` returns.
Status initialized(std::unique_ptr<engine::Engine> engine) {
  Session session(std::move(engine));
  return session.initialize();
}

TEST(SessionCpu, RejectsEngineWithoutBindings) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{})),
                     ErrorCode::kInvalidProgram, "no bindings");
}

TEST(SessionCpu, RejectsStagingSlotsOutsideOneToFour) {
  for (const int slots : {0, -1, 5}) {
    SessionOptions options;
    options.staging_slots = slots;
    Session session(FakeEngine::elementwise(Shape{1}, Shape{8}), options);
    const Status status = session.initialize();
    TRTET_EXPECT_ERROR(status, ErrorCode::kInvalidArgument, "staging_slots") << "staging_slots " << slots;
  }
}

TEST(SessionCpu, RejectsProfileOfDifferentRanks) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{
                           input_desc("x", Shape{1, 4}, Shape{8}), output_desc("out", 1)})),
                       ErrorCode::kInvalidProgram, "differ in rank");
}

TEST(SessionCpu, RejectsProfileMinAboveMax) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(std::vector<engine::IoDesc>{
                           input_desc("x", Shape{9}, Shape{8}), output_desc("out", 1)})),
                       ErrorCode::kInvalidProgram, "exceeds maximum");
}

TEST(SessionCpu, RejectsAliasFromAnInput) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{0, 0, engine::AliasKind::kUser}})),
                       ErrorCode::kInvalidProgram, "as an output");
}

TEST(SessionCpu, RejectsAliasToAnOutput) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{1, 1, engine::AliasKind::kKvCacheUpdate}})),
                       ErrorCode::kInvalidProgram, "as an input");
}

TEST(SessionCpu, RejectsAliasOutOfRange) {
  TRTET_EXPECT_ERROR(initialized(std::make_unique<FakeEngine>(
                           std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1)},
                           std::vector<engine::Alias>{engine::Alias{5, 0, engine::AliasKind::kKvCacheUpdate}})),
                       ErrorCode::kInvalidProgram, "binding 5");
}

TEST(SessionCpu, RejectsAliasAcrossDtypes) {
  TRTET_EXPECT_ERROR(initialized(
      std::make_unique<FakeEngine>(
          std::vector<engine::IoDesc>{input_desc("c", Shape{4}, Shape{4}), output_desc("o", 1, DataType::kFloat16)},
          std::vector<engine::Alias>{engine::Alias{1, 0, engine::AliasKind::kKvCacheUpdate}})),
      ErrorCode::kInvalidProgram, "differ in dtype");
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
