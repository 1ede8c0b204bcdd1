// The fuzzer's own CPU-side parts: deterministic draws that cover what the fuzzer promises to
// cover, the shrinker, and the CPU reference.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/shrink.h"

namespace trtet_test::fuzz {
namespace {

template <class T>
const T* as(const Step& step) {
  return std::get_if<T>(&step);
}

std::vector<const CallPlan*> plans_of(const Step& step) {
  std::vector<const CallPlan*> plans;
  if (auto* s = as<CallStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<CaptureStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<DestroyStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<BadCallStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<ConcurrentStep>(step)) {
    for (const auto& thread : s->threads) {
      for (const CallPlan& plan : thread) plans.push_back(&plan);
    }
  }
  return plans;
}

std::string print(const Sequence& sequence) {
  std::string text;
  for (const EngineSpec& spec : sequence.sessions) text += to_string(spec) + "\n";
  for (const Step& step : sequence.steps) text += to_string(step) + "\n";
  return text;
}

TEST(ContractFuzzGenerator, SameSeedSameSequenceOtherSeedOtherSequence) {
  FuzzConfig config;
  config.seed = 42;
  const std::string first = print(generate(config));
  EXPECT_EQ(first, print(generate(config)));
  config.seed = 43;
  EXPECT_NE(first, print(generate(config)));
}

TEST(ContractFuzzGenerator, DrawsEveryStepMemoryStreamEngineAndBoundarySize) {
  std::set<std::size_t> step_kinds;
  std::set<Mem> mems;
  std::set<StreamSource> streams;
  std::set<int> outputs;
  std::set<std::size_t> sizes;
  bool alias = false, mixed = false, guard = false, no_guard = false, outside_profile = false, destroy_during = false;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    const Sequence sequence = generate(config);
    ASSERT_EQ(sequence.steps.size(), static_cast<std::size_t>(config.length));
    ASSERT_GE(sequence.sessions.size(), 1u);
    ASSERT_LE(sequence.sessions.size(), 3u);
    for (const EngineSpec& spec : sequence.sessions) {
      const EngineModel model(spec);
      int count = 0;
      for (int b = 0; b < model.io_count(); ++b) count += model.role(b).input ? 0 : 1;
      outputs.insert(count);
      alias = alias || spec.alias;
    }
    for (const Step& step : sequence.steps) {
      step_kinds.insert(step.index());
      if (auto* s = as<ConcurrentStep>(step)) destroy_during = destroy_during || s->destroy_during;
      for (const CallPlan* plan : plans_of(step)) {
        std::set<Mem> in_call(plan->mems.begin(), plan->mems.end());
        mixed = mixed || in_call.size() > 1;
        mems.insert(plan->mems.begin(), plan->mems.end());
        (plan->guard ? guard : no_guard) = true;
        if (plan->guard) streams.insert(plan->stream.source);
        outside_profile = outside_profile || !plan->shape.in_profile();
        sizes.insert(static_cast<std::size_t>(plan->shape.numel()) * sizeof(float));
      }
    }
  }
  EXPECT_EQ(step_kinds.size(), std::variant_size_v<Step>) << "some step kind is never drawn";
  EXPECT_EQ(mems.size(), 4u) << "some memory kind is never drawn";
  EXPECT_EQ(streams.size(), 4u) << "some stream source is never drawn";
  EXPECT_EQ(outputs, (std::set<int>{1, 2, 3, 4})) << "engines of 1 to 4 outputs";
  EXPECT_TRUE(alias && mixed && guard && no_guard && outside_profile && destroy_during);
  for (std::size_t boundary : {std::size_t{0}, std::size_t{(1u << 20) + 4}, std::size_t{(2u << 20) + 4},
                               std::size_t{64u << 20}}) {
    EXPECT_TRUE(sizes.count(boundary)) << "tensor size " << boundary << " is never drawn";
  }
  EXPECT_LE(*sizes.rbegin(), std::size_t{64u << 20});
}

TEST(ContractFuzzGenerator, CapturesUseOnlyCapturableStreamsAndDeviceOrPinnedMemory) {
  int captures = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    const Sequence sequence = generate(config);
    for (const Step& step : sequence.steps) {
      const auto* capture = as<CaptureStep>(step);
      if (capture == nullptr) continue;
      ++captures;
      EXPECT_TRUE(capture->call.guard);
      EXPECT_TRUE(capture->call.stream.capturable()) << to_string(step);
      EXPECT_TRUE(capture->call.shape.in_profile()) << to_string(step);
      EXPECT_LE(static_cast<std::size_t>(capture->call.shape.numel()) * 4, config.concurrent_max_bytes);
      for (Mem mem : capture->call.mems) EXPECT_TRUE(mem == Mem::kDevice || mem == Mem::kPinned) << to_string(step);
      if (capture->pageable_probe >= 0) {
        const EngineModel model(sequence.sessions[static_cast<std::size_t>(capture->session)]);
        EXPECT_LT(capture->pageable_probe, model.io_count());
        EXPECT_FALSE(model.role(capture->pageable_probe).updated_in_place);
      }
    }
  }
  EXPECT_GT(captures, 100);
}

TEST(ContractFuzzGenerator, SizesStayWithinTheConfiguredMaximum) {
  FuzzConfig config;
  config.max_bytes = (2u << 20) + 4096;
  config.concurrent_max_bytes = 1u << 20;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    config.seed = seed;
    for (const Step& step : generate(config).steps) {
      const bool small = as<ConcurrentStep>(step) || as<CaptureStep>(step) || as<DestroyStep>(step);
      for (const CallPlan* plan : plans_of(step)) {
        EXPECT_LE(static_cast<std::size_t>(plan->shape.numel()) * 4, small ? config.concurrent_max_bytes : config.max_bytes)
            << to_string(step);
      }
    }
  }
}

TEST(ContractFuzzShrink, FindsTheTwoStepsThatFail) {
  std::vector<std::size_t> steps;
  for (std::size_t i = 0; i < 40; ++i) steps.push_back(i);
  auto fails = [](const std::vector<std::size_t>& s) {
    bool has3 = false, has29 = false;
    for (std::size_t i : s) {
      has3 = has3 || i == 3;
      has29 = has29 || i == 29;
    }
    return has3 && has29;
  };
  int trials = 0;
  const auto shrunk = shrink_steps(steps, fails, std::chrono::steady_clock::now() + std::chrono::minutes(1), &trials);
  EXPECT_EQ(shrunk, (std::vector<std::size_t>{3, 29}));
  EXPECT_GT(trials, 0);
  EXPECT_LT(trials, 200);
}

TEST(ContractFuzzShrink, StopsAtTheDeadlineWithWhatItHas) {
  std::vector<std::size_t> steps = {0, 1, 2, 3};
  int trials = -1;
  const auto shrunk = shrink_steps(steps, [](const auto&) { return true; }, std::chrono::steady_clock::now(), &trials);
  EXPECT_EQ(shrunk, steps);
  EXPECT_EQ(trials, 0);
}

TEST(ContractFuzzReference, SumFollowsTheKernelsOrder) {
  const std::vector<float> x = draw_floats(100000, 7);
  double exact = 0;
  for (float v : x) exact += v;
  const float sum = reference_sum(x);
  EXPECT_NEAR(sum, exact, 1e-3 * std::fabs(exact) + 1e-2);
  EXPECT_EQ(reference_sum({}), 0.0f);
  EXPECT_EQ(reference_sum({1.5f, -2.0f}), -0.5f);
}

TEST(ContractFuzzReference, CompareCatchesWrongValuesPoisonAndSwappedOutputs) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 2;
  spec.alias = true;
  const EngineModel model(spec);
  ASSERT_EQ(model.io_count(), 6);  // x, y, cache -> out0, out1, cache_out
  std::vector<std::vector<float>> inputs(6);
  inputs[0] = draw_floats(64, 1);
  inputs[1] = draw_floats(64, 2);
  inputs[2] = draw_floats(64, 3);
  std::vector<float> out0(64), out1(64), cache(64);
  for (std::size_t i = 0; i < 64; ++i) {
    out0[i] = 1.0f * inputs[0][i] + 0.5f * inputs[1][i];
    out1[i] = 2.0f * inputs[0][i] - 0.5f * inputs[1][i];
    cache[i] = inputs[2][i] + inputs[0][i];
  }
  EXPECT_EQ(model.compare(3, out0.data(), 64, inputs), "");
  EXPECT_EQ(model.compare(4, out1.data(), 64, inputs), "");
  EXPECT_EQ(model.compare(5, cache.data(), 64, inputs), "");
  EXPECT_NE(model.compare(3, out1.data(), 64, inputs), "") << "swapped outputs must differ";
  std::vector<float> poisoned = out0;
  std::memset(&poisoned[17], kPoisonByte, sizeof(float));
  EXPECT_NE(model.compare(3, poisoned.data(), 64, inputs).find("poison"), std::string::npos);
  EXPECT_NE(model.compare(5, inputs[2].data(), 64, inputs).find("unchanged"), std::string::npos);
}

TEST(ContractFuzzReference, DrawnFloatsAreDeterministicNonZeroAndBounded) {
  const auto a = draw_floats(1000, 9), b = draw_floats(1000, 9), c = draw_floats(1000, 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(std::fabs(v), 0.25f);
    EXPECT_LE(std::fabs(v), 4.0f);
  }
}

}  // namespace
}  // namespace trtet_test::fuzz
