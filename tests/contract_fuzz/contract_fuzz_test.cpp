// The fuzzer's own CPU-side parts: deterministic draws that cover what the fuzzer promises to
// cover, the shrinker, and the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#if TRTET_FUZZ_HAVE_EXECUTORCH
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#endif

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/fuzz_outputs_engine.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/seed_sets.h"
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
  if (auto* s = as<RepeatStep>(step)) plans.push_back(&s->call);
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
  EXPECT_EQ(outputs, (std::set<int>{1, 2, 3, 4, 5})) << "engines of 1 to 4 outputs, and one more of a side dtype";
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
      const bool small = as<ConcurrentStep>(step) || as<CaptureStep>(step) || as<DestroyStep>(step) ||
                         as<RepeatStep>(step);
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
    cache[i] = inputs[0][i] - inputs[2][i];  // kMulti's in-place update: cache = x - cache
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


// ---- sessions with options, shared state, caller work, repeats (issue 29) ----

/// What a set of sequences draws of the session options and the overlap draws.
struct OptionDraws {
  std::set<int> profiles, slots;
  std::set<ex::DataType> dtypes;  ///< side dtypes
  std::set<std::size_t> budgets;
  std::set<Mem> cache_mems;
  std::set<std::int64_t> caller_spins;
  bool graphs = false, record_sms = false, small = false, big = false;
  int shared_calls = 0;           ///< calls on the shared cache
  int shared_across_streams = 0;  ///< concurrent steps with shared-cache calls of 2+ threads on 2+ streams
  int repeats_device_only = 0;    ///< repeat steps a repeat path could take (guarded, stream object, device-accessible)
  int green_sm_calls = 0;         ///< guarded green calls of an SM-recording session
  int profile_calls[3] = {0, 0, 0};  ///< calls of each profile of 3-profile sessions
  int rejected_idle = 0;          ///< bad calls (idle-after-reject)
  int busy_candidates = 0;        ///< guarded device-only calls expected to succeed (busy-at-return)
  int behind_held = 0;            ///< such a call right after one of its session on another stream (held gate)
  int ordered_updates = 0;        ///< of those, both updating a shared cache whose result shows their order
  /// Staging slots reused early: step pairs as in reuses_slot_early.
  int slot_reused = 0;
  std::vector<std::string> slot_reused_at;  ///< "seed S steps I,J" of each

  /// The stream the call's work runs on: the guard's stream object, else the session's own.
  static std::string runs_on(const CallPlan& plan) {
    return plan.guard && plan.stream.capturable() ? to_string(plan.stream) : "own";
  }
  /// `plan` is called outside a capture and must succeed (in profile, in-place input on the device).
  static bool succeeds(const EngineModel& model, const CallPlan& plan) {
    const int cache = model.cache_binding();
    return model.in_profile(plan.shape) && (cache < 0 || !is_host(plan.mems[static_cast<std::size_t>(cache)]));
  }
  /// `first`, then `next`, consecutive calls of a session that never captured (Note [ordering
  /// replays]): `first`, guarded, stages host inputs into the session's one staging slot, returns
  /// once they are consumed, before its engine reads them again kLateReadUs or more later, and is
  /// checked only after `next` was made (Note [promises when made]); `next`, on another stream,
  /// copies its own into that slot, in staging `first` sized (so nothing grows, which would order
  /// the copies after every earlier call). Without the wait for `first`'s engine (Note [pipelined
  /// calls]), `first`'s outputs are computed from `next`'s inputs.
  static bool reuses_slot_early(const EngineSpec& spec, const CallPlan& first, const CallPlan& next) {
    const EngineModel model(spec);
    const bool first_staged = first.guard && !sm_check(spec, first) && succeeds(model, first) &&
                              model.stages_inputs(first) && !model.host_outputs(first);
    const bool next_staged = !sm_check(spec, next) && succeeds(model, next) && model.stages_inputs(next) &&
                             runs_on(next) != runs_on(first) && next.caller_spin_us < model.late_read_us();
    if (spec.staging_slots != 1 || model.late_read_us() < kLateReadUs || !first_staged || !next_staged ||
        model.profile_for(first.shape) != model.profile_for(next.shape) || next.shape.numel() > first.shape.numel()) {
      return false;
    }
    for (int b = 0; b < model.io_count(); ++b) {
      const std::size_t i = static_cast<std::size_t>(b);
      const bool stageable = model.role(b).aliased_input < 0 && !model.role(b).updated_in_place;
      if (stageable && is_host(next.mems[i]) && !is_host(first.mems[i])) return false;  // staging `first` did not size
    }
    return true;
  }
  /// How late the engine must read (the host prepares and makes the next call meanwhile).
  static constexpr std::int64_t kLateReadUs = 500;

  /// A call the executor checks for SMs: right away, after synchronizing first where the engine
  /// ran elsewhere before (Executor::prepare_sm_check).
  static bool sm_check(const EngineSpec& spec, const CallPlan& plan) {
    return spec.record_sms && plan.guard && plan.stream.source == StreamSource::kGreen;
  }
  /// A call whose gate the executor keeps closed until the session's next call (Executor::call).
  static bool holdable(const EngineSpec& spec, const CallPlan& plan) {
    bool device = true;
    for (Mem mem : plan.mems) device = device && (mem == Mem::kDevice || mem == Mem::kManaged);
    return device && plan.guard && EngineModel(spec).in_profile(plan.shape) && !sm_check(spec, plan);
  }

  void add(const Sequence& sequence) {
    const CallPlan* previous = nullptr;
    int previous_session = -1;
    const CallPlan* last_call = nullptr;  // the call of the step before (null: none)
    // Per session: alive and never captured (a capture orders every later eager call after all
    // earlier ones: Note [ordering replays]).
    std::vector<bool> pipelines(sequence.sessions.size(), true);
    for (std::size_t index = 0; index < sequence.steps.size(); ++index) {
      const Step& step = sequence.steps[index];
      const CallPlan* plan = nullptr;
      int session = -1;
      if (auto* s = as<CallStep>(step)) plan = &s->call, session = s->session;
      if (auto* s = as<RepeatStep>(step)) plan = &s->call, session = s->session;
      if (auto* s = as<RecreateSessionStep>(step)) pipelines[static_cast<std::size_t>(s->session)] = true;
      if (auto* s = as<CaptureStep>(step)) pipelines[static_cast<std::size_t>(s->session)] = false;
      if (auto* s = as<DestroyStep>(step)) pipelines[static_cast<std::size_t>(s->session)] = false;
      if (auto* s = as<ConcurrentStep>(step); s != nullptr && s->destroy_during) {
        pipelines[static_cast<std::size_t>(s->session)] = false;
      }
      if (plan != nullptr && last_call != nullptr && previous_session == session &&
          pipelines[static_cast<std::size_t>(session)] &&
          reuses_slot_early(sequence.sessions[static_cast<std::size_t>(session)], *last_call, *plan)) {
        ++slot_reused;
        slot_reused_at.push_back("seed " + std::to_string(sequence.config.seed) + " steps " +
                                 std::to_string(index - 1) + "," + std::to_string(index));
      }
      last_call = plan;
      const bool now = plan != nullptr && holdable(sequence.sessions[static_cast<std::size_t>(session)], *plan);
      if (now && previous != nullptr && previous_session == session &&
          to_string(previous->stream) != to_string(plan->stream)) {
        ++behind_held;
        const bool negates = EngineModel(sequence.sessions[static_cast<std::size_t>(session)]).negates_cache();
        if (negates && previous->shared_cache && plan->shared_cache) ++ordered_updates;
      }
      previous = now ? plan : nullptr;
      previous_session = session;
    }
    for (const EngineSpec& spec : sequence.sessions) {
      profiles.insert(spec.profiles);
      slots.insert(spec.staging_slots);
      budgets.insert(spec.budget_bytes);
      graphs = graphs || spec.graphs;
      record_sms = record_sms || spec.record_sms;
      (spec.max_rows == kSmallMaxRows ? small : big) = true;
      if (spec.in_place()) cache_mems.insert(spec.cache_mem);
      if (spec.has_side()) dtypes.insert(spec.side_dtype);
    }
    for (const Step& step : sequence.steps) {
      if (as<BadCallStep>(step)) ++rejected_idle;
      if (auto* s = as<RepeatStep>(step)) {
        bool device = true;
        for (Mem mem : s->call.mems) device = device && (mem == Mem::kDevice || mem == Mem::kManaged);
        if (device && s->call.guard && s->call.stream.capturable()) ++repeats_device_only;
      }
      if (auto* s = as<ConcurrentStep>(step)) {
        std::set<std::size_t> threads;
        std::set<std::string> streams;
        for (std::size_t t = 0; t < s->threads.size(); ++t) {
          for (const CallPlan& plan : s->threads[t]) {
            if (!plan.shared_cache) continue;
            threads.insert(t);
            streams.insert(plan.guard ? to_string(plan.stream) : "per-thread of t" + std::to_string(t));
          }
        }
        if (threads.size() >= 2 && streams.size() >= 2) ++shared_across_streams;
      }
      const int session = std::visit([](const auto& s) { return session_of(s); }, step);
      for (const CallPlan* plan : plans_of(step)) {
        if (plan->caller_spin_us > 0) caller_spins.insert(plan->caller_spin_us);
        if (plan->shared_cache) ++shared_calls;
        if (session < 0) continue;
        const EngineSpec& spec = sequence.sessions[static_cast<std::size_t>(session)];
        const EngineModel model(spec);
        if (spec.record_sms && plan->guard && plan->stream.source == StreamSource::kGreen) ++green_sm_calls;
        if (spec.profiles == 3 && model.profile_for(plan->shape) >= 0) ++profile_calls[model.profile_for(plan->shape)];
        bool device = true;
        for (Mem mem : plan->mems) device = device && (mem == Mem::kDevice || mem == Mem::kManaged);
        if (device && plan->guard && model.in_profile(plan->shape) && !as<BadCallStep>(step)) ++busy_candidates;
      }
    }
  }

  template <class S>
  static int session_of(const S& s) {
    if constexpr (std::is_same_v<S, ReplayStep> || std::is_same_v<S, RecreateStreamStep>) {
      return -1;
    } else {
      return s.session;
    }
  }
};

TEST(ContractFuzzGenerator, SessionsDrawGraphsBudgetsSlotsProfilesAndSmRecording) {
  OptionDraws seen;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    seen.add(generate(config));
  }
  EXPECT_EQ(seen.profiles, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(seen.slots, (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(seen.budgets, (std::set<std::size_t>{0, 4u << 20, 32u << 20}));
  EXPECT_EQ(seen.cache_mems, (std::set<Mem>{Mem::kDevice, Mem::kManaged}));
  EXPECT_TRUE(seen.graphs && seen.record_sms && seen.small && seen.big);
  for (int p = 0; p < 3; ++p) EXPECT_GT(seen.profile_calls[p], 20) << "calls of profile " << p;
  EXPECT_EQ(seen.dtypes.size(), 8u) << "every side dtype";
}

TEST(ContractFuzzGenerator, CallsOverlapThroughSharedStateCallerWorkAndRepeats) {
  OptionDraws seen;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    const Sequence sequence = generate(config);
    seen.add(sequence);
    for (const Step& step : sequence.steps) {
      const int session = std::visit([](const auto& s) { return OptionDraws::session_of(s); }, step);
      for (const CallPlan* plan : plans_of(step)) {
        if (!plan->shared_cache) continue;
        const EngineSpec& spec = sequence.sessions[static_cast<std::size_t>(session)];
        const EngineModel model(spec);
        ASSERT_TRUE(spec.in_place()) << to_string(step);
        EXPECT_EQ(plan->shape.rows, spec.cache_shape.rows) << "a shared-cache call has the cache's shape";
        EXPECT_EQ(plan->shape.cols, spec.cache_shape.cols);
        EXPECT_EQ(plan->mems[static_cast<std::size_t>(model.cache_binding())], spec.cache_mem);
        EXPECT_TRUE(model.in_profile(plan->shape)) << to_string(spec);
        EXPECT_FALSE(as<BadCallStep>(step) || as<DestroyStep>(step) || as<CaptureStep>(step)) << to_string(step);
      }
      if (auto* s = as<BadCallStep>(step)) {
        EXPECT_EQ(s->call.caller_spin_us, 0) << "the stream must be idle before a bad call";
        EXPECT_TRUE(EngineModel(sequence.sessions[static_cast<std::size_t>(s->session)]).in_profile(s->call.shape));
      }
      if (auto* s = as<RepeatStep>(step)) {
        EXPECT_GE(s->times, 2);
        EXPECT_GT(s->call.caller_spin_us, 0) << "each repeat's inputs are queued on its stream";
      }
      if (auto* s = as<CaptureStep>(step)) {
        EXPECT_EQ(s->call.caller_spin_us, 0);
      }
    }
  }
  EXPECT_EQ(seen.caller_spins, (std::set<std::int64_t>{20, 200, 2000}));
  EXPECT_GT(seen.shared_calls, 300);
  EXPECT_GT(seen.shared_across_streams, 20) << "in-place updates of one cache from several threads and streams";
  EXPECT_GT(seen.repeats_device_only, 100);
  EXPECT_GT(seen.green_sm_calls, 200);
  EXPECT_GT(seen.busy_candidates, 500);
  EXPECT_GT(seen.behind_held, 50) << "a call on another stream right after a held one of its session";
  EXPECT_GT(seen.ordered_updates, 10) << "two order-dependent updates of one cache from two streams in a row";
}

TEST(ContractFuzzGenerator, StagingSlotsAreReusedFromAnotherStreamWhileTheirEngineReadsLate) {
  OptionDraws seen;
  std::set<int> kernels;
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    FuzzConfig config;
    config.seed = seed;
    const Sequence sequence = generate(config);
    seen.add(sequence);
    for (const EngineSpec& spec : sequence.sessions) kernels.insert(spec.kernels);
  }
  EXPECT_EQ(kernels, (std::set<int>{1, 2}));
  EXPECT_GT(seen.slot_reused, 20) << "a staging slot rewritten from another stream while its engine reads it late";
}

// The GPU seed set must reach every new draw and check (run on the H200 in under a minute).
TEST(ContractFuzzGenerator, TheSeedSetCoversEveryNewDraw) {
  OptionDraws seen;
  for (const FuzzConfig& config : regression_seed_set()) seen.add(generate(config));
  std::cout << "seed set: " << seen.busy_candidates << " busy-at-return candidates, " << seen.rejected_idle
            << " bad calls, " << seen.green_sm_calls << " green calls of SM-recording sessions, " << seen.behind_held
            << " calls behind a held one (" << seen.ordered_updates << " with order-dependent cache updates), "
            << seen.repeats_device_only << " device-only repeats, "
            << seen.shared_across_streams << " concurrent steps sharing a cache across streams, " << seen.shared_calls
            << " shared-cache calls, " << seen.slot_reused << " staging slots reused early\n";
  EXPECT_EQ(seen.profiles, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(seen.budgets, (std::set<std::size_t>{0, 4u << 20, 32u << 20}));
  EXPECT_EQ(seen.caller_spins, (std::set<std::int64_t>{20, 200, 2000}));
  EXPECT_TRUE(seen.graphs && seen.record_sms && seen.small && seen.big);
  const std::pair<int, const char*> reached[] = {
      {seen.shared_across_streams, "a cache shared across threads and streams"},
      {seen.repeats_device_only, "a repeat the repeat path can take"},
      {seen.green_sm_calls, "an SM check"},
      {seen.rejected_idle, "an idle stream after a rejected call"},
      {seen.busy_candidates, "a busy stream at return"},
      {seen.behind_held, "a call behind a held one"},
      {seen.ordered_updates, "two order-dependent updates from two streams"},
      {seen.slot_reused, "a staging slot rewritten from another stream while its engine reads it late"}};
  for (const auto& [count, what] : reached) EXPECT_GT(count, 0) << "the seed set never reaches " << what;
  for (const std::string& at : seen.slot_reused_at) std::cout << "staging slot reused early: " << at << "\n";
  std::set<std::size_t> element_sizes;
  for (ex::DataType dtype : seen.dtypes) element_sizes.insert(ex::element_size(dtype));
  for (std::size_t size : {1, 2, 8}) EXPECT_TRUE(element_sizes.count(size)) << "a side dtype of " << size << " bytes";
  for (int p = 0; p < 3; ++p) EXPECT_GT(seen.profile_calls[p], 0) << "calls of profile " << p;
  std::set<EtProgram> programs;
  for (const FuzzConfig& config : et_regression_seed_set()) {
    const EtSequence sequence = generate_et(config);
    for (const EtStep& step : sequence.steps) {
      if (auto* s = std::get_if<EtCallStep>(&step)) programs.insert(sequence.modules[static_cast<std::size_t>(s->module)]);
      if (auto* s = std::get_if<EtThreadsStep>(&step)) {
        for (const EtThread& thread : s->threads) programs.insert(thread.program);
      }
    }
  }
  EXPECT_EQ(programs.size(), static_cast<std::size_t>(kEtPrograms)) << "every program is called by the ET seed set";
}

TEST(ContractFuzzReference, TheTightestProfileIsSelectedAndChangesTheMultiEnginesOutputs) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 2;
  spec.profiles = 3;
  const EngineModel model(spec);
  EXPECT_EQ(model.profile_for(InputShape{10, 4}), 1) << "[1024, 4] is the tightest";
  EXPECT_EQ(model.profile_for(InputShape{5000, 2}), 2);
  EXPECT_EQ(model.profile_for(InputShape{5000, 3}), 0);
  EXPECT_EQ(model.profile_for(InputShape{kMaxRows, 4}), 0);
  EXPECT_EQ(model.profile_for(InputShape{10, 5}), -1) << "outside every profile";
  spec.max_rows = kSmallMaxRows;
  EXPECT_EQ(EngineModel(spec).profile_for(InputShape{kSmallMaxRows + 1, 1}), -1);
  spec.profiles = 1;
  EXPECT_EQ(EngineModel(spec).profile_for(InputShape{10, 4}), 0) << "one profile: profile 0";

  std::vector<std::vector<float>> inputs(4);
  inputs[0] = draw_floats(64, 1);
  inputs[1] = draw_floats(64, 2);
  std::vector<float> under1(64);
  for (std::size_t i = 0; i < 64; ++i) {
    under1[i] = FuzzOutputsEngine::coefficient_a(1) * inputs[0][i] + FuzzOutputsEngine::coefficient_b(1, 1) * inputs[1][i];
  }
  EXPECT_EQ(model.compare(3, under1.data(), 64, inputs, 1), "");
  EXPECT_NE(model.compare(3, under1.data(), 64, inputs, 0), "") << "a call run under the wrong profile must differ";
}

TEST(ContractFuzzReference, ASideDtypeAddsABytewiseOutputOfItsElementSize) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 1;
  spec.alias = true;
  spec.side_dtype = ex::DataType::kInt8;
  const EngineModel model(spec);
  ASSERT_EQ(model.io_count(), 7);  // x, y, cache, t -> out0, cache_out, t_out
  EXPECT_TRUE(model.role(3).input);
  EXPECT_EQ(model.role(3).dtype, ex::DataType::kInt8);
  EXPECT_EQ(model.role(5).aliased_input, 2);
  EXPECT_EQ(model.role(6).xor_of, 3);
  EXPECT_EQ(model.role(6).element_bytes(), 1u);
  std::vector<std::vector<float>> inputs(7);
  inputs[3] = draw_floats(3, 5);  // 12 bytes, of which an int8 [11] tensor uses 11
  std::vector<unsigned char> out(11);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = reinterpret_cast<const unsigned char*>(inputs[3].data())[i] ^ 0x5A;
  EXPECT_EQ(model.compare_bytes(6, out.data(), out.size(), inputs), "");
  out[10] ^= 1;
  EXPECT_NE(model.compare_bytes(6, out.data(), out.size(), inputs).find("byte 10"), std::string::npos);
  spec.max_rows = kSmallMaxRows;
  spec.side_dtype = ex::DataType::kInt64;  // t and t_out take 8 bytes an element
  const std::size_t largest = static_cast<std::size_t>(kSmallMaxRows * kMaxCols) * sizeof(float);
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * (largest * 3 + 2 * 2 * largest));
}

TEST(ContractFuzzReference, EachPlainOutputHasItsOwnCoefficientsWhateverInputsComeFirst) {
  // FuzzOutputsEngine writes out_j at binding input_count() + j: after x, y, "cache" and "t" alike
  // (the model once counted "cache" but not "t", and expected out1's values in out0).
  for (const bool alias : {false, true}) {
    for (const ex::DataType side : {ex::DataType::kFloat32, ex::DataType::kInt8, ex::DataType::kBFloat16}) {
      for (int plain = 1; plain + (alias ? 1 : 0) <= FuzzOutputsEngine::kMaxOutputs; ++plain) {
        EngineSpec spec;
        spec.kind = EngineKind::kMulti;
        spec.plain_outputs = plain;
        spec.alias = alias;
        spec.side_dtype = side;
        spec.profiles = 3;
        const EngineModel model(spec);
        int inputs_before = 0;
        while (model.role(inputs_before).input) ++inputs_before;
        ASSERT_EQ(inputs_before, 2 + (alias ? 1 : 0) + (spec.has_side() ? 1 : 0));
        std::vector<std::vector<float>> inputs(static_cast<std::size_t>(model.io_count()));
        inputs[0] = draw_floats(32, 1);
        inputs[1] = draw_floats(32, 2);
        for (int j = 0; j < plain; ++j) {
          const int binding = inputs_before + j;
          ASSERT_FALSE(model.role(binding).input);
          ASSERT_LT(model.role(binding).aliased_input, 0);
          ASSERT_LT(model.role(binding).xor_of, 0);
          for (int profile = 0; profile < 3; ++profile) {
            std::vector<float> out(32);
            for (std::size_t i = 0; i < out.size(); ++i) {
              out[i] = FuzzOutputsEngine::coefficient_a(j) * inputs[0][i] +
                       FuzzOutputsEngine::coefficient_b(j, profile) * inputs[1][i];
            }
            EXPECT_EQ(model.compare(binding, out.data(), out.size(), inputs, profile), "")
                << "out" << j << " of " << to_string(spec) << " under profile " << profile;
            if (j + 1 < plain) {
              EXPECT_NE(model.compare(binding + 1, out.data(), out.size(), inputs, profile), "")
                  << "out" << j << "'s values must not pass as out" << j + 1 << "'s";
            }
          }
        }
      }
    }
  }
}

TEST(ContractFuzzReference, EnginesReadTheirInputsAfterTheSpinsBeforeTheirLastRead) {
  EngineSpec spec;  // elementwise: each launch reads x and y, then spins
  spec.spin_us = 500;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 0);
  spec.kernels = 2;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500) << "the second launch reads them after the first one's spin";
  spec.kind = EngineKind::kAux;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500);
  spec.kind = EngineKind::kAliasing;  // every spin, then the update
  EXPECT_EQ(EngineModel(spec).late_read_us(), 1000);
  spec.kind = EngineKind::kMulti;  // one spin whatever the launches, then the outputs
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500);
  spec.kind = EngineKind::kSum;  // the sum first, then the spins
  EXPECT_EQ(EngineModel(spec).late_read_us(), 0);

  spec.kind = EngineKind::kAliasing;  // cache (in place), x, cache_out (aliased)
  const EngineModel model(spec);
  CallPlan plan;
  plan.shape = InputShape{4, 1};
  plan.mems = {Mem::kPinned, Mem::kDevice, Mem::kPageable};
  EXPECT_FALSE(model.stages_inputs(plan)) << "an input updated in place is never staged (a host one is refused)";
  EXPECT_FALSE(model.host_outputs(plan)) << "an aliased output lives in its input's memory";
  plan.mems = {Mem::kDevice, Mem::kPageable, Mem::kDevice};
  EXPECT_TRUE(model.stages_inputs(plan));
  plan.shape = InputShape{0, 1};
  EXPECT_FALSE(model.stages_inputs(plan)) << "an empty input copies nothing";
  spec.kind = EngineKind::kElementwise;
  plan.mems = {Mem::kDevice, Mem::kManaged, Mem::kPinned};
  EXPECT_TRUE(EngineModel(spec).host_outputs(plan));
}

TEST(ContractFuzzReference, TheBudgetTakesBindingsInOrderWhileTheyFit) {
  EngineSpec spec;  // elementwise: x, y, out
  spec.max_rows = kSmallMaxRows;
  const std::size_t largest = static_cast<std::size_t>(kSmallMaxRows * kMaxCols) * sizeof(float);  // 1 MiB
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(0), 0u);
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 6 * largest) << "all three, twice each";
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(4u << 20), 4 * largest) << "x and y fit, out does not";
  spec.kind = EngineKind::kAliasing;  // cache (in place), x, cache_out (aliased): only x is staged
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * largest);
  spec.kind = EngineKind::kSum;  // x, a one-element output
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * largest + 2 * sizeof(float));
  spec.kind = EngineKind::kElementwise;
  spec.max_rows = kMaxRows;
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 0u) << "a large engine's bindings never fit";
}

TEST(ContractFuzzReference, SharedCacheUpdatesAreExactInAnyOrder) {
  const std::vector<float> a = draw_dyadic(4096, 1), b = draw_dyadic(4096, 2), c = draw_dyadic(4096, 3);
  EXPECT_EQ(a, draw_dyadic(4096, 1));
  for (float v : a) {
    EXPECT_GE(std::fabs(v), 0.25f);
    EXPECT_LE(std::fabs(v), 4.0f);
    EXPECT_EQ(v * 4, std::round(v * 4)) << "a multiple of 1/4";
  }
  SharedCache forward, backward;
  forward.expected = draw_dyadic(4096, 9);
  backward.expected = forward.expected;
  for (int round = 0; round < 100; ++round) {  // 300 updates, in two orders
    for (const auto* x : {&a, &b, &c}) forward.apply(*x);
    for (const auto* x : {&c, &b, &a}) backward.apply(*x);
  }
  EXPECT_EQ(forward.expected, backward.expected);
  EXPECT_EQ(forward.updates, 300u);
  // cache = x - cache (kMulti): exact too, and two calls in the other order leave another cache.
  SharedCache ab, ba;
  ab.negate = ba.negate = true;
  const std::vector<float> start = draw_dyadic(4096, 9);
  ab.expected = ba.expected = start;
  ab.apply(a);
  ab.apply(b);
  ba.apply(b);
  ba.apply(a);
  EXPECT_NE(ab.expected, ba.expected);
  for (std::size_t i = 0; i < 4096; ++i) ASSERT_EQ(ab.expected[i], b[i] - (a[i] - start[i])) << i;
}

// Note [buffers in use] (executor_call.cpp): the buffers of a call still to be checked and of a
// live graph stay lent across the pool's release; every other buffer is lent again. Seed
// 4581569510697142803's shape: a captured sum call's 4-byte output, released, became the next
// call's output, and the graph's replay wrote its own sum there before that call was checked.
// Pageable memory: no GPU needed.
TEST(ContractFuzzPool, AGraphsAndAPendingCallsBuffersAreNotLentAgainUntilReleased) {
  EngineSpec spec;
  spec.kind = EngineKind::kSum;  // x, a one-element output
  const EngineModel model(spec);
  CallPlan plan;
  plan.mems = {Mem::kPageable, Mem::kPageable};
  plan.shape = InputShape{8159, 1};
  BufferPool pool;
  auto graph = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  plan.shape = InputShape{47896, 3};
  plan.data_seed = 2;
  auto pending = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(pending.ok()) << pending.status().to_string();
  const std::vector<const Buffer*> graph_buffers = (*graph)->buffers();
  ASSERT_EQ(graph_buffers.size(), 2u) << "the input and the output";
  std::vector<const Buffer*> in_use = graph_buffers;
  for (const Buffer* b : (*pending)->buffers()) in_use.push_back(b);

  pool.release_all(in_use);
  for (int round = 0; round < 2; ++round) {  // the same sizes again: every free buffer would fit
    plan.shape = round == 0 ? InputShape{8159, 1} : InputShape{47896, 3};
    auto later = CallArgs::prepare(model, plan, pool, nullptr);
    ASSERT_TRUE(later.ok()) << later.status().to_string();
    for (const Buffer* b : (*later)->buffers()) {
      EXPECT_EQ(std::find(in_use.begin(), in_use.end(), b), in_use.end())
          << "round " << round << ": a buffer still in use was lent to a later call";
    }
  }
  // Once the graph is retired and the call checked, their buffers are lent again.
  pool.release_all();
  plan.shape = InputShape{8159, 1};
  auto again = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->buffers(), graph_buffers) << "the first free buffers that fit: the graph's, in the same order";
}

TEST(ContractFuzzEtGenerator, ProgramReferences) {
  float tolerance = 0;
  EXPECT_EQ(et_reference(EtProgram::kPlanned, 1, 2, &tolerance), 1.0f);          // 2x - 0.5y
  EXPECT_EQ(et_reference(EtProgram::kDevicePlanned, 1, 2, &tolerance), 1.0f);
  EXPECT_EQ(et_reference(EtProgram::kCpuOps, 1, 2, &tolerance), 5.0f);           // 4x + 0.5y
  EXPECT_EQ(et_reference(EtProgram::kTwoDelegates, 1, 2, &tolerance), 7.0f);     // 8x - 0.5y
  EXPECT_LT(tolerance, 1e-3f);
  EXPECT_GT(tolerance, 0.0f);
  EXPECT_TRUE(is_planned(EtProgram::kCpuOps) && is_planned(EtProgram::kTwoDelegates));
  EXPECT_EQ(planned_output_slot(EtProgram::kTwoDelegates), 4);
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

TEST(ContractFuzzEtPrograms, ProgramsHaveTheirOperatorsDelegatesAndDeviceArenas) {
  ensure_et_runtime();
  struct Want {
    EtProgram program;
    std::size_t backends;
    bool cuda_arena;
    std::size_t instructions;
  };
  for (const Want& want : {Want{EtProgram::kPlanned, 1, false, 1}, Want{EtProgram::kDevicePlanned, 1, true, 4},
                           Want{EtProgram::kCpuOps, 1, true, 6}, Want{EtProgram::kTwoDelegates, 2, true, 7}}) {
    Module module(et_program_path(want.program));
    auto meta = module.method_meta("forward");
    ASSERT_TRUE(meta.ok()) << et_program_path(want.program);
    EXPECT_EQ(meta->num_backends(), want.backends) << to_string(want.program);
    EXPECT_TRUE(meta->uses_backend("TensorRTBackend"));
    EXPECT_EQ(meta->num_instructions(), want.instructions) << to_string(want.program);
    bool cuda = false;
    for (std::size_t b = 0; b < meta->num_memory_planned_buffers(); ++b) {
      auto device = meta->memory_planned_buffer_device(b);
      cuda = cuda || (device.ok() && device->type() == ::executorch::aten::DeviceType::CUDA);
    }
    EXPECT_EQ(cuda, want.cuda_arena) << to_string(want.program);
  }
}

TEST(ContractFuzzEtPrograms, PlannedInputsSitWherePlannedInputAddressSays) {
  ensure_et_runtime();
  Module module(et_program_path(EtProgram::kPlanned));
  const std::vector<float> x = draw_floats(3000, 1), y = draw_floats(3000, 2);
  auto tx = from_blob(const_cast<float*>(x.data()), {1000, 3});
  auto ty = from_blob(const_cast<float*>(y.data()), {1000, 3});
  ASSERT_EQ(module.set_input("forward", etr::EValue(*tx), 0), etr::Error::Ok);
  ASSERT_EQ(module.set_input("forward", etr::EValue(*ty), 1), etr::Error::Ok);
  const void* at_x = planned_input_address(module, EtProgram::kPlanned, 0);
  const void* at_y = planned_input_address(module, EtProgram::kPlanned, 1);
  ASSERT_NE(at_x, nullptr);
  ASSERT_NE(at_y, nullptr);
  EXPECT_EQ(std::memcmp(at_x, x.data(), x.size() * sizeof(float)), 0) << "x is not where the memory plan puts it";
  EXPECT_EQ(std::memcmp(at_y, y.data(), y.size() * sizeof(float)), 0) << "y is not where the memory plan puts it";
}
#endif

}  // namespace
}  // namespace trtet_test::fuzz
