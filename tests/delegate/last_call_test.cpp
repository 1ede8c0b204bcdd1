// The repeated-call decision (delegate/last_call.h, Note [repeated calls]) and the stream id type
// it rests on, without a GPU.
#include "delegate/last_call.h"

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
    call_.where.stream = reinterpret_cast<cudaStream_t>(0x1000);
    call_.where.id = StreamId::of(42);
    call_.enqueued_plainly = true;
    call_.completion = Completion::kReturnAtOnce;
  }
  Call call_;
  float storage_[3][8]{};
  TensorView args_[3];
};

TEST_F(LastCallTest, ThePlainCallIsRepeatedByTheSameArgumentsOnTheSameStream) {
  LastCall last;
  EXPECT_FALSE(last.repeated_by(args_, 3, call_)) << "nothing is kept before a call";
  last.remember(args_, 3, call_, /*captured=*/false);
  EXPECT_TRUE(last.repeated_by(args_, 3, call_));
  EXPECT_EQ(last.graph(), nullptr);
}

TEST_F(LastCallTest, AnyDifferenceTakesTheFullPath) {
  LastCall last;
  last.remember(args_, 3, call_, false);
  Call other_stream = call_;
  other_stream.where.id = StreamId::of(43);
  EXPECT_FALSE(last.repeated_by(args_, 3, other_stream));
  Call unknown_stream = call_;
  unknown_stream.where.id = StreamId();
  EXPECT_FALSE(last.repeated_by(args_, 3, unknown_stream));
  Call capturing = call_;
  capturing.facts.capturing = true;
  EXPECT_FALSE(last.repeated_by(args_, 3, capturing));
  EXPECT_FALSE(last.repeated_by(args_, 2, call_));
  TensorView changed[3] = {args_[0], args_[1], args_[2]};
  changed[1].shape = Shape{1, 4};
  EXPECT_FALSE(last.repeated_by(changed, 3, call_));
  changed[1] = args_[1];
  changed[2].data = storage_[0];
  EXPECT_FALSE(last.repeated_by(changed, 3, call_));
  changed[2] = args_[2];
  changed[0].hint = MemoryHint::kDevice;
  EXPECT_FALSE(last.repeated_by(changed, 3, call_));
  last.forget();
  EXPECT_FALSE(last.repeated_by(args_, 3, call_));
  last.keep_again();
  EXPECT_TRUE(last.repeated_by(args_, 3, call_));
}

TEST_F(LastCallTest, OnlyCallsThatCanRepeatAsTheyAreAreKept) {
  auto kept = [&](const Call& call, bool captured) {
    LastCall last;
    last.remember(args_, 3, call, captured);
    return last.repeated_by(args_, 3, call_);
  };
  EXPECT_TRUE(kept(call_, false));
  EXPECT_FALSE(kept(call_, /*captured=*/true)) << "a caller's capture of an earlier call";
  Call waits = call_;
  waits.completion = Completion::kWaitOutputsReady;
  EXPECT_FALSE(kept(waits, false)) << "host I/O is never skipped";
  Call crossed = call_;
  crossed.cross_stream = true;
  EXPECT_FALSE(kept(crossed, false));
  Call joined = call_;
  joined.where.choice.default_handle = true;
  EXPECT_FALSE(kept(joined, false)) << "a call on the session's own stream";
  Call aux = call_;
  aux.enqueued_plainly = false;
  EXPECT_FALSE(kept(aux, false)) << "an enqueue with auxiliary streams, or a graph's first sight";
  Call unknown = call_;
  unknown.where.id = StreamId();
  EXPECT_FALSE(kept(unknown, false));
}

TEST_F(LastCallTest, AGraphLaunchIsKeptWithItsGraphAndProfile) {
  Call launched = call_;
  launched.enqueued_plainly = false;
  launched.replayed = reinterpret_cast<cudaGraphExec_t>(0x2000);
  launched.profile = 1;
  LastCall last;
  last.remember(args_, 3, launched, false);
  EXPECT_TRUE(last.repeated_by(args_, 3, launched));
  EXPECT_EQ(last.graph(), reinterpret_cast<cudaGraphExec_t>(0x2000));
  EXPECT_EQ(last.profile(), 1);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
