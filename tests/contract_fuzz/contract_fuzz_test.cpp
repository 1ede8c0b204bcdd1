// The fuzzer's own CPU-side parts: deterministic draws that cover what the fuzzer promises to
// cover, the shrinker, and the CPU reference.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>
#include <set>
#include <string>

#if TRTET_FUZZ_HAVE_EXECUTORCH
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#endif

#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/et_sequence.h"
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

/// What the draws of many seeds produced, of what both legs draw.
struct SeenDraws {
  std::set<std::size_t> step_kinds;
  std::set<Mem> mems;
  std::set<StreamSource> streams;
  std::set<std::size_t> sizes;
};

TEST(ContractFuzzGenerator, DrawsEveryStepMemoryStreamEngineAndBoundarySize) {
  SeenDraws seen;
  std::set<int> outputs;
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
      seen.step_kinds.insert(step.index());
      if (auto* s = as<ConcurrentStep>(step)) destroy_during = destroy_during || s->destroy_during;
      for (const CallPlan* plan : plans_of(step)) {
        std::set<Mem> in_call(plan->mems.begin(), plan->mems.end());
        mixed = mixed || in_call.size() > 1;
        seen.mems.insert(plan->mems.begin(), plan->mems.end());
        (plan->guard ? guard : no_guard) = true;
        if (plan->guard) seen.streams.insert(plan->stream.source);
        outside_profile = outside_profile || !plan->shape.in_profile();
        seen.sizes.insert(static_cast<std::size_t>(plan->shape.numel()) * sizeof(float));
      }
    }
  }
  EXPECT_EQ(seen.step_kinds.size(), std::variant_size_v<Step>) << "some step kind is never drawn";
  EXPECT_EQ(seen.mems.size(), 4u) << "some memory kind is never drawn";
  EXPECT_EQ(seen.streams.size(), 4u) << "some stream source is never drawn";
  EXPECT_EQ(outputs, (std::set<int>{1, 2, 3, 4})) << "engines of 1 to 4 outputs";
  EXPECT_TRUE(alias && mixed && guard && no_guard && outside_profile && destroy_during);
  for (std::size_t boundary : {std::size_t{0}, std::size_t{(1u << 20) + 4}, std::size_t{(2u << 20) + 4},
                               std::size_t{64u << 20}}) {
    EXPECT_TRUE(seen.sizes.count(boundary)) << "tensor size " << boundary << " is never drawn";
  }
  EXPECT_LE(*seen.sizes.rbegin(), std::size_t{64u << 20});
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

// Concurrent steps must reach the pipelined path of the session (Note [pipelined calls] in
// src/delegate/call_ordering.cpp): two or more threads whose guarded calls on different stream objects
// stage host memory, pinned and pageable, so their copies and engines can overlap; and some with
// an in-place engine, whose runs must never overlap.
TEST(ContractFuzzGenerator, ConcurrentStepsDrawHostIoOnSeveralStreams) {
  int pipelined_pinned = 0, with_pageable = 0, in_place = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    const Sequence sequence = generate(config);
    for (const Step& step : sequence.steps) {
      const auto* concurrent = as<ConcurrentStep>(step);
      if (concurrent == nullptr) continue;
      std::set<std::string> streams;  // stream objects (created or green) with a guarded pinned call on them
      bool pageable = false;
      for (const auto& thread : concurrent->threads) {
        for (const CallPlan& plan : thread) {
          if (!plan.guard || !plan.stream.capturable()) continue;
          bool pinned = false;
          for (Mem mem : plan.mems) {
            pinned = pinned || mem == Mem::kPinned;
            pageable = pageable || mem == Mem::kPageable;
          }
          if (pinned) streams.insert(to_string(plan.stream));
        }
      }
      if (streams.size() < 2) continue;
      ++pipelined_pinned;
      if (pageable) ++with_pageable;
      const EngineSpec& spec = sequence.sessions[static_cast<std::size_t>(concurrent->session)];
      if (spec.kind == EngineKind::kAliasing || spec.alias) ++in_place;
    }
  }
  EXPECT_GT(pipelined_pinned, 150) << "concurrent steps with pinned calls on two or more streams";
  EXPECT_GT(with_pageable, 100);
  EXPECT_GT(in_place, 40);
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

/// A printed sequence as FuzzConfig::green == false should print it: green-context streams as the
/// created streams of their slots, green-current bad calls as wrong-dtype ones.
std::string as_without_green(const std::string& text) {
  static const std::regex green_stream("green#([0-9])\\((small|rest)\\)");
  const std::string streams = std::regex_replace(text, green_stream, "created#$1");
  return std::regex_replace(streams, std::regex("green-current-no-guard"), "wrong-dtype");
}

TEST(ContractFuzzGenerator, NoGreenDrawsNoGreenContextAndChangesNothingElse) {
  int changed = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    FuzzConfig no_green = config;
    no_green.green = false;
    const std::string with = print(generate(config));
    const std::string without = print(generate(no_green));
    EXPECT_EQ(without.find("green"), std::string::npos) << "seed " << seed << ":\n" << without;
    EXPECT_EQ(as_without_green(with), without) << "seed " << seed;
    changed += with != without ? 1 : 0;
  }
  EXPECT_GT(changed, 100) << "most seeds draw green-context streams";
  FuzzConfig config;
  EXPECT_EQ(to_string(config).find("--no-green"), std::string::npos);
  config.green = false;
  EXPECT_NE(to_string(config).find(" --no-green"), std::string::npos) << "the reproduce line carries it";
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

// ---- the executorch leg's generator ----

std::string print(const EtSequence& sequence) {
  std::string text;
  for (EtProgram program : sequence.modules) text += std::string(to_string(program)) + "\n";
  for (const EtStep& step : sequence.steps) text += to_string(step) + "\n";
  return text;
}

std::vector<std::pair<EtProgram, const EtCallPlan*>> et_plans_of(const EtSequence& sequence, const EtStep& step) {
  std::vector<std::pair<EtProgram, const EtCallPlan*>> plans;
  if (auto* s = std::get_if<EtCallStep>(&step)) {
    plans.emplace_back(sequence.modules[static_cast<std::size_t>(s->module)], &s->call);
  }
  if (auto* s = std::get_if<EtThreadsStep>(&step)) {
    for (const EtThread& thread : s->threads) {
      for (const EtCallPlan& call : thread.calls) plans.emplace_back(thread.program, &call);
    }
  }
  return plans;
}

FuzzConfig et_config(std::uint64_t seed) {
  FuzzConfig config;
  config.leg = Leg::kExecuTorch;
  config.seed = seed;
  return config;
}

TEST(ContractFuzzEtGenerator, SameSeedSameSequenceOtherSeedOtherSequence) {
  const std::string first = print(generate_et(et_config(42)));
  EXPECT_EQ(first, print(generate_et(et_config(42))));
  EXPECT_NE(first, print(generate_et(et_config(43))));
  EXPECT_EQ(generate_et(et_config(42)).config.leg, Leg::kExecuTorch);
}

TEST(ContractFuzzEtGenerator, TheReproduceLineNamesTheLeg) {
  EXPECT_NE(to_string(et_config(7)).find("--leg executorch --seed 7 "), std::string::npos) << to_string(et_config(7));
  FuzzConfig session;
  session.seed = 7;
  EXPECT_EQ(to_string(session).find("--leg"), std::string::npos) << "the session leg's line stays as it was";
}

TEST(ContractFuzzEtGenerator, DrawsEveryStepProgramMemoryStreamAndBoundarySize) {
  SeenDraws seen;
  std::set<EtProgram> programs;
  std::set<std::size_t> thread_counts;
  std::set<int> repeats;
  std::set<std::int64_t> cols;
  bool guard = false, no_guard = false, outside = false, unload_after = false, remake = false, unload = false;
  bool mixed = false, scribble = false;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const EtSequence sequence = generate_et(et_config(seed));
    ASSERT_EQ(sequence.steps.size(), 30u);
    ASSERT_GE(sequence.modules.size(), 1u);
    ASSERT_LE(sequence.modules.size(), 3u);
    programs.insert(sequence.modules.begin(), sequence.modules.end());
    for (const EtStep& step : sequence.steps) {
      seen.step_kinds.insert(step.index());
      if (auto* s = std::get_if<EtUnloadStep>(&step)) (s->remake ? remake : unload) = true;
      if (auto* s = std::get_if<EtThreadsStep>(&step)) {
        thread_counts.insert(s->threads.size());
        for (const EtThread& thread : s->threads) programs.insert(thread.program);
      }
      for (const auto& [program, plan] : et_plans_of(sequence, step)) {
        ASSERT_EQ(plan->mems.size(), 3u);
        if (is_planned(program)) {
          for (Mem mem : plan->mems) EXPECT_EQ(mem, Mem::kPageable) << "a planned program's I/O is the Module's own";
        } else {
          seen.mems.insert(plan->mems.begin(), plan->mems.end());
          mixed = mixed || std::set<Mem>(plan->mems.begin(), plan->mems.end()).size() > 1;
        }
        (plan->guard ? guard : no_guard) = true;
        if (plan->guard) seen.streams.insert(plan->stream.source);
        outside = outside || !et_in_profile(plan->shape);
        unload_after = unload_after || plan->unload_after;
        scribble = scribble || plan->scribble;
        repeats.insert(plan->repeats);
        cols.insert(plan->shape.cols);
        seen.sizes.insert(static_cast<std::size_t>(plan->shape.numel()) * sizeof(float));
        // ExecuTorch must accept every drawn shape (a resize within the bound): only the delegate may refuse.
        EXPECT_GE(plan->shape.rows, 0);
        EXPECT_LE(plan->shape.numel(), kEtBoundElements) << to_string(step);
      }
    }
  }
  EXPECT_EQ(seen.step_kinds.size(), std::variant_size_v<EtStep>) << "some step kind is never drawn";
  EXPECT_EQ(programs.size(), static_cast<std::size_t>(kEtPrograms)) << "some program is never drawn";
  EXPECT_EQ(seen.mems.size(), 4u) << "some memory kind is never drawn for an unplanned program";
  EXPECT_EQ(seen.streams.size(), 4u) << "some stream source is never drawn";
  EXPECT_EQ(thread_counts, (std::set<std::size_t>{2, 3, 4}));
  EXPECT_EQ(repeats, (std::set<int>{1, 2, 3}));
  EXPECT_TRUE(cols.count(1) && cols.count(kEtMaxCols) && cols.count(0) && cols.count(kEtMaxCols + 1));
  EXPECT_TRUE(guard && no_guard && outside && unload_after && remake && unload && mixed && scribble);
  for (std::size_t boundary : {std::size_t{0}, std::size_t{(1u << 20) + 4}, std::size_t{(2u << 20) + 4},
                               std::size_t{(3u << 20) + 4}}) {
    EXPECT_TRUE(seen.sizes.count(boundary)) << "tensor size " << boundary << " is never drawn";
  }
  EXPECT_LE(*seen.sizes.rbegin(), kEtBoundBytes);
}

TEST(ContractFuzzEtGenerator, NoGreenDrawsNoGreenContextAndChangesNothingElse) {
  int changed = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    FuzzConfig no_green = et_config(seed);
    no_green.green = false;
    const std::string with = print(generate_et(et_config(seed)));
    const std::string without = print(generate_et(no_green));
    EXPECT_EQ(without.find("green"), std::string::npos) << "seed " << seed << ":\n" << without;
    EXPECT_EQ(as_without_green(with), without) << "seed " << seed;
    changed += with != without ? 1 : 0;
  }
  EXPECT_GT(changed, 100) << "most seeds draw green-context streams";
}

TEST(ContractFuzzEtGenerator, ThreadsStayWithinTheirMaximum) {
  FuzzConfig config = et_config(1);
  config.max_bytes = (1u << 20) + 4096;
  config.concurrent_max_bytes = 256u << 10;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    config.seed = seed;
    const EtSequence sequence = generate_et(config);
    for (const EtStep& step : sequence.steps) {
      const bool threads = std::holds_alternative<EtThreadsStep>(step);
      for (const auto& entry : et_plans_of(sequence, step)) {
        EXPECT_LE(static_cast<std::size_t>(entry.second->shape.numel()) * 4,
                  threads ? config.concurrent_max_bytes : config.max_bytes)
            << to_string(step);
      }
    }
  }
}

#if TRTET_FUZZ_HAVE_EXECUTORCH
// What the GPU run relies on, checked without one (the engines' init then reports no GPU and the
// method still loads): ExecuTorch accepts every drawn shape and the output the fuzzer hands over,
// and a planned program's inputs sit where planned_input_address says.
namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

TEST(ContractFuzzEtPrograms, ExecuTorchAcceptsEveryDrawnShapeAndTheFuzzersOutput) {
  ensure_et_runtime();
  Module planned(et_program_path(EtProgram::kPlanned));
  Module unplanned(et_program_path(EtProgram::kUnplanned));
  ASSERT_EQ(planned.load_method("forward"), etr::Error::Ok) << et_program_path(EtProgram::kPlanned);
  ASSERT_EQ(unplanned.load_method("forward"), etr::Error::Ok) << et_program_path(EtProgram::kUnplanned);
  std::vector<float> data(kEtBoundElements, 1.5f);
  std::vector<float> out(kEtBoundElements);
  auto out_tensor = from_blob(out.data(), {static_cast<int>(kEtBoundElements / kEtMaxCols), static_cast<int>(kEtMaxCols)});
  ASSERT_EQ(unplanned.set_output("forward", etr::EValue(*out_tensor), 0), etr::Error::Ok);
  int checked = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const EtSequence sequence = generate_et(et_config(seed));
    for (const EtStep& step : sequence.steps) {
      for (const auto& entry : et_plans_of(sequence, step)) {
        const InputShape& shape = entry.second->shape;
        auto x = from_blob(data.data(), {static_cast<int>(shape.rows), static_cast<int>(shape.cols)});
        Module& module = is_planned(entry.first) ? planned : unplanned;
        ASSERT_EQ(module.set_input("forward", etr::EValue(*x), 0), etr::Error::Ok) << to_string(*entry.second);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(ContractFuzzEtPrograms, PlannedInputsSitWherePlannedInputAddressSays) {
  ensure_et_runtime();
  Module module(et_program_path(EtProgram::kPlanned));
  const std::vector<float> x = draw_floats(3000, 1), y = draw_floats(3000, 2);
  auto tx = from_blob(const_cast<float*>(x.data()), {1000, 3});
  auto ty = from_blob(const_cast<float*>(y.data()), {1000, 3});
  ASSERT_EQ(module.set_input("forward", etr::EValue(*tx), 0), etr::Error::Ok);
  ASSERT_EQ(module.set_input("forward", etr::EValue(*ty), 1), etr::Error::Ok);
  const void* at_x = planned_input_address(module, 0);
  const void* at_y = planned_input_address(module, 1);
  ASSERT_NE(at_x, nullptr);
  ASSERT_NE(at_y, nullptr);
  EXPECT_EQ(std::memcmp(at_x, x.data(), x.size() * sizeof(float)), 0) << "x is not where the memory plan puts it";
  EXPECT_EQ(std::memcmp(at_y, y.data(), y.size() * sizeof(float)), 0) << "y is not where the memory plan puts it";
}
#endif

}  // namespace
}  // namespace trtet_test::fuzz
