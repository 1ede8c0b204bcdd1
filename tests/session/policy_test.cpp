// The execute contract's pure decisions (session/policy.h), every row, without a GPU.
#include "session/policy.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error_match.h"
#include "common/gpu.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(n); }

TEST(ChooseStream, SelectedStreamWins) {
  auto choice = choose_stream(fake_stream(0x1000), false);
  TRTET_ASSERT_OK(choice);
  EXPECT_EQ(choice->caller, fake_stream(0x1000));
  EXPECT_TRUE(choice->selected);
  EXPECT_FALSE(choice->default_handle);
  EXPECT_FALSE(needs_green_context_query(fake_stream(0x1000)));
}

TEST(ChooseStream, SelectedStreamWinsEvenWithGreenContextCurrent) {
  auto choice = choose_stream(fake_stream(0x2000), true);
  TRTET_ASSERT_OK(choice);
  EXPECT_EQ(choice->caller, fake_stream(0x2000));
}

TEST(ChooseStream, ExplicitNullSelectionIsASelectionOfADefaultStream) {
  auto choice = choose_stream(cudaStream_t{nullptr}, false);
  TRTET_ASSERT_OK(choice);
  EXPECT_EQ(choice->caller, nullptr);
  EXPECT_TRUE(choice->selected);
  EXPECT_TRUE(choice->default_handle);
  EXPECT_TRUE(needs_green_context_query(cudaStream_t{nullptr}));
}

TEST(ChooseStream, NoSelectionFallsBackToPerThreadStream) {
  auto choice = choose_stream(std::nullopt, false);
  TRTET_ASSERT_OK(choice);
  EXPECT_EQ(choice->caller, cudaStreamPerThread);
  EXPECT_FALSE(choice->selected);
  EXPECT_TRUE(choice->default_handle);
  EXPECT_EQ(fallback_stream(), cudaStreamPerThread);
  EXPECT_TRUE(needs_green_context_query(std::nullopt));
}

TEST(ChooseStream, NoSelectionWithGreenContextCurrentFailsNamingTheGuard) {
  auto choice = choose_stream(std::nullopt, true);
  ASSERT_FALSE(choice.ok());
  TRTET_EXPECT_ERROR(choice, ErrorCode::kInvalidArgument, "CudaStreamGuard", "green context");
}

TEST(ChooseStream, ASelectedDefaultStreamWithGreenContextCurrentFails) {
  auto choice = choose_stream(cudaStreamLegacy, true);
  ASSERT_FALSE(choice.ok());
  TRTET_EXPECT_ERROR(choice, ErrorCode::kInvalidArgument, "select a stream of that green context");
}

// Every combination of the five facts, against the contract table:
//   capturing: pageable -> error; else return at once (no synchronization inside a capture)
//   no guard -> wait for outputs; guard + host outputs -> wait for outputs;
//   guard + host inputs only -> wait until inputs consumed; guard + all device -> return at once.
TEST(DecideCompletion, EveryRow) {
  for (int bits = 0; bits < 32; ++bits) {
    CallFacts facts;
    facts.caller_selected = bits & 1;
    facts.capturing = bits & 2;
    facts.host_inputs = bits & 4;
    facts.host_outputs = bits & 8;
    facts.pageable = bits & 16;
    SCOPED_TRACE("selected=" + std::to_string(facts.caller_selected) + " capturing=" + std::to_string(facts.capturing) +
                 " host_in=" + std::to_string(facts.host_inputs) + " host_out=" + std::to_string(facts.host_outputs) +
                 " pageable=" + std::to_string(facts.pageable));
    auto completion = decide_completion(facts);
    if (facts.capturing && facts.pageable) {
      ASSERT_FALSE(completion.ok());
      TRTET_EXPECT_ERROR(completion, ErrorCode::kInvalidArgument, "pageable", "captur");
      continue;
    }
    TRTET_ASSERT_OK(completion);
    Completion expected;
    if (facts.capturing) {
      expected = Completion::kReturnAtOnce;
    } else if (!facts.caller_selected || facts.host_outputs) {
      expected = Completion::kWaitOutputsReady;
    } else if (facts.host_inputs) {
      expected = Completion::kWaitInputsConsumed;
    } else {
      expected = Completion::kReturnAtOnce;
    }
    EXPECT_EQ(*completion, expected) << to_string(*completion);
  }
}

TEST(DecideCompletion, NamedRows) {
  auto row = [](bool selected, bool capturing, bool host_in, bool host_out, bool pageable) {
    return decide_completion(CallFacts{selected, capturing, host_in, host_out, pageable});
  };
  // none | any | no -> outputs ready on return
  EXPECT_EQ(*row(false, false, false, false, false), Completion::kWaitOutputsReady);
  EXPECT_EQ(*row(false, false, true, true, true), Completion::kWaitOutputsReady);
  // selected | all device | no -> at once
  EXPECT_EQ(*row(true, false, false, false, false), Completion::kReturnAtOnce);
  // selected | host | no -> when host data allows
  EXPECT_EQ(*row(true, false, true, false, false), Completion::kWaitInputsConsumed);
  EXPECT_EQ(*row(true, false, true, false, true), Completion::kWaitInputsConsumed);
  EXPECT_EQ(*row(true, false, false, true, true), Completion::kWaitOutputsReady);
  // selected | device or pinned | capturing -> at once
  EXPECT_EQ(*row(true, true, true, true, false), Completion::kReturnAtOnce);
  // selected | pageable | capturing -> error
  EXPECT_FALSE(row(true, true, true, false, true).ok());
}

TEST(Completion, NamesAreDistinct) {
  EXPECT_STRNE(to_string(Completion::kReturnAtOnce), to_string(Completion::kWaitInputsConsumed));
  EXPECT_STRNE(to_string(Completion::kWaitInputsConsumed), to_string(Completion::kWaitOutputsReady));
  EXPECT_STRNE(to_string(Completion::kReturnAtOnce), "unknown");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
