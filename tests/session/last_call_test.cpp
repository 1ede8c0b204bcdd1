// The repeated-call decision (session/last_call.h, Note [repeated calls]) and the stream id type
// it rests on, without a GPU.
#include "session/last_call.h"

#include <gtest/gtest.h>

#include "cuda/stream_id.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using cuda::StreamId;

TEST(StreamId, UnknownIsTheSameAsNothing) {
  const StreamId unknown;
  EXPECT_FALSE(unknown.known());
  EXPECT_FALSE(unknown.same_as(unknown));
  EXPECT_FALSE(unknown.same_as(StreamId::of(0)));
  EXPECT_TRUE(StreamId::of(0).known());  // 0 is an id like any other
  EXPECT_TRUE(StreamId::of(0).same_as(StreamId::of(0)));
  EXPECT_TRUE(StreamId::of(7).same_as(StreamId::of(7)));
  EXPECT_FALSE(StreamId::of(7).same_as(StreamId::of(8)));
}

class LastCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      args_[i].data = storage_[i];
      args_[i].capacity_bytes = sizeof(storage_[i]);
      args_[i].shape = Shape{2, 4};
      args_[i].dtype = DataType::kFloat32;
      args_[i].hint = MemoryHint::kUnknown;
    }
    plan_.where.stream = reinterpret_cast<cudaStream_t>(0x1000);
    plan_.where.id = StreamId::of(42);
    plan_.completion = Completion::kReturnAtOnce;
    run_.plain = true;
  }
  /// A call as the session hands it over: its plan, how ordering ordered it, how the engine ran.
  struct Outcome {
    CallPlan plan;
    CallOrder order;
    EngineRun run;
  };
  Outcome call() const { return Outcome{plan_, order_, run_}; }
  static void remember(LastCall& last, const TensorView* args, std::size_t count, const Outcome& call) {
    last.remember(args, count, call.plan, call.order, call.run);
  }
  CallPlan plan_;
  CallOrder order_;
  EngineRun run_;
  float storage_[3][8]{};
  TensorView args_[3];
};

TEST_F(LastCallTest, ThePlainCallIsRepeatedByTheSameArgumentsOnTheSameStream) {
  LastCall last;
  EXPECT_FALSE(last.repeated_by(args_, 3, plan_.where)) << "nothing is kept before a call";
  remember(last, args_, 3, call());
  EXPECT_TRUE(last.repeated_by(args_, 3, plan_.where));
  EXPECT_EQ(last.graph(), nullptr);
}

TEST_F(LastCallTest, AnyDifferenceTakesTheFullPath) {
  LastCall last;
  remember(last, args_, 3, call());
  ResolvedStream other_stream = plan_.where;
  other_stream.id = StreamId::of(43);
  EXPECT_FALSE(last.repeated_by(args_, 3, other_stream));
  ResolvedStream unknown_stream = plan_.where;
  unknown_stream.id = StreamId();
  EXPECT_FALSE(last.repeated_by(args_, 3, unknown_stream));
  ResolvedStream capturing = plan_.where;
  capturing.facts.capturing = true;
  EXPECT_FALSE(last.repeated_by(args_, 3, capturing));
  EXPECT_FALSE(last.repeated_by(args_, 2, plan_.where));
  TensorView changed[3] = {args_[0], args_[1], args_[2]};
  changed[1].shape = Shape{1, 4};
  EXPECT_FALSE(last.repeated_by(changed, 3, plan_.where));
  changed[1] = args_[1];
  changed[2].data = storage_[0];
  EXPECT_FALSE(last.repeated_by(changed, 3, plan_.where));
  changed[2] = args_[2];
  changed[0].hint = MemoryHint::kDevice;
  EXPECT_FALSE(last.repeated_by(changed, 3, plan_.where));
  last.forget();
  EXPECT_FALSE(last.repeated_by(args_, 3, plan_.where));
  last.keep_again();
  EXPECT_TRUE(last.repeated_by(args_, 3, plan_.where));
}

TEST_F(LastCallTest, OnlyCallsThatCanRepeatAsTheyAreAreKept) {
  auto kept = [&](const Outcome& call) {
    LastCall last;
    remember(last, args_, 3, call);
    return last.repeated_by(args_, 3, plan_.where);
  };
  EXPECT_TRUE(kept(call()));
  Outcome replays = call();
  replays.order.graphs_may_replay = true;
  EXPECT_FALSE(kept(replays)) << "a caller's capture of an earlier call";
  Outcome waits = call();
  waits.plan.completion = Completion::kWaitOutputsReady;
  EXPECT_FALSE(kept(waits)) << "host I/O is never skipped";
  Outcome crossed = call();
  crossed.order.cross_stream = true;
  EXPECT_FALSE(kept(crossed));
  Outcome joined = call();
  joined.plan.where.choice.default_handle = true;
  EXPECT_FALSE(kept(joined)) << "a call on the session's own stream";
  Outcome aux = call();
  aux.run.plain = false;
  EXPECT_FALSE(kept(aux)) << "an enqueue with auxiliary streams, or a graph's first sight";
  Outcome unknown = call();
  unknown.plan.where.id = StreamId();
  EXPECT_FALSE(kept(unknown));
  Outcome capturing = call();
  capturing.plan.where.facts.capturing = true;
  EXPECT_FALSE(kept(capturing)) << "a call recorded into a capture";
}

TEST_F(LastCallTest, AGraphLaunchIsKeptWithItsGraphAndProfile) {
  Outcome launched = call();
  launched.run.plain = false;
  launched.run.launched = reinterpret_cast<cudaGraphExec_t>(0x2000);
  launched.plan.profile = 1;
  LastCall last;
  remember(last, args_, 3, launched);
  EXPECT_TRUE(last.repeated_by(args_, 3, launched.plan.where));
  EXPECT_EQ(last.graph(), reinterpret_cast<cudaGraphExec_t>(0x2000));
  EXPECT_EQ(last.profile(), 1);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
