// The session leg's generator: one seed, one sequence; every step, memory kind, stream, engine and
// boundary size drawn; captures only where they can be; sizes within the maximum; --no-green;
// session options, shared state, caller work and repeats drawn, and reached by the seed set.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/seed_sets.h"
#include "contract_fuzz/test_draws.h"

namespace trtet_test::fuzz {
namespace {

TEST(ContractFuzzGenerator, SameSeedSameSequenceOtherSeedOtherSequence) {
  FuzzConfig config;
  config.seed = 42;
  const std::string first = print(generate(config));
  EXPECT_EQ(first, print(generate(config)));
  config.seed = 43;
  EXPECT_NE(first, print(generate(config)));
}

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
// src/session/call_ordering.cpp): two or more threads whose guarded calls on different stream objects
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

// ---- sessions with options, shared state, caller work, repeats ----

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

}  // namespace
}  // namespace trtet_test::fuzz
