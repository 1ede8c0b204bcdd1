#include "contract_fuzz/generator.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/rng.h"

namespace trtet_test::fuzz {
namespace {

constexpr std::size_t kMiB = 1 << 20;

/// `cache_bytes`: the largest shared cache (a cache is a call's input: within every call's maximum).
/// `late`: the draws added after the seed set's soak seeds were found (generate()).
EngineSpec draw_engine(Rng& rng, Rng& late, std::int64_t max_spin_us, std::size_t cache_bytes) {
  EngineSpec spec;
  switch (rng.weighted({40, 15, 15, 15, 15})) {
    case 0: {
      spec.kind = EngineKind::kMulti;
      spec.alias = rng.chance(0.6);
      const int outputs = static_cast<int>(rng.uniform(1, 4));
      spec.plain_outputs = outputs - (spec.alias ? 1 : 0);
      if (rng.chance(0.5)) {
        // A pair of bindings of another dtype (element sizes 1, 2 and 8 bytes as well as 4).
        using torch_tensorrt::executorch_backend::DataType;
        const DataType dtypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
                                   DataType::kUInt8,   DataType::kInt32,    DataType::kInt64,   DataType::kBool};
        spec.side_dtype = dtypes[rng.uniform(0, 7)];
      }
      break;
    }
    case 1: spec.kind = EngineKind::kElementwise; break;
    case 2: spec.kind = EngineKind::kAux; break;
    case 3: spec.kind = EngineKind::kAliasing; break;
    default: spec.kind = EngineKind::kSum; break;
  }
  const std::int64_t spins[] = {0, 0, 0, 50, 500, 2000, 5000};
  spec.spin_us = std::min(max_spin_us, spins[rng.uniform(0, 6)]);
  spec.kernels = late.chance(0.5) ? 2 : 1;  // with a spin, most engines then read their inputs late
  // The session around it (docs/DESIGN.md): profiles, SM recording, graphs, staging budgets and slots.
  const bool small = rng.chance(0.3);
  spec.max_rows = small ? kSmallMaxRows : kMaxRows;
  spec.profiles = static_cast<int>(rng.weighted({45, 30, 25})) + 1;
  spec.record_sms = rng.chance(0.4);
  spec.graphs = rng.chance(0.3);
  // A budget covers bindings whose largest size (over every profile) fits twice: only a small
  // engine's (1 MiB per input) do, so only they draw one: part of the staging, or all of it.
  if (small) {
    const std::size_t budgets[] = {0, 4 * kMiB, 32 * kMiB};
    spec.budget_bytes = budgets[rng.weighted({40, 25, 35})];
  }
  spec.staging_slots = static_cast<int>(rng.weighted({25, 5, 55, 15})) + 1;
  if (spec.in_place()) {
    // The shared cache: up to 4 MiB, never empty, within profile 0.
    const std::size_t bytes = log_uniform(rng, 16, std::max<std::size_t>(16, std::min(cache_bytes, 4 * kMiB)));
    spec.cache_shape.cols = rng.chance(0.5) ? 1 : rng.uniform(2, kMaxCols);
    spec.cache_shape.rows = std::max<std::int64_t>(
        1, std::min<std::int64_t>(spec.max_rows, static_cast<std::int64_t>(bytes / sizeof(float)) / spec.cache_shape.cols));
    spec.cache_mem = rng.chance(0.7) ? Mem::kDevice : Mem::kManaged;
  }
  return spec;
}


InputShape draw_shape(Rng& rng, std::size_t max_bytes) {
  std::size_t bytes = 0;
  switch (rng.weighted({22, 40, 28, 10})) {
    case 0: {
      bytes = draw_boundary_size(rng, max_bytes);
      break;
    }
    case 1: bytes = log_uniform(rng, 4, std::min<std::size_t>(64 * 1024, max_bytes)); break;
    case 2: bytes = log_uniform(rng, 64 * 1024, std::min<std::size_t>(4 * kMiB, max_bytes)); break;
    default: bytes = log_uniform(rng, 4 * kMiB, max_bytes); break;
  }
  bytes = std::min(bytes, max_bytes);
  const std::int64_t elements = static_cast<std::int64_t>(bytes / sizeof(float));
  InputShape shape;
  shape.cols = rng.chance(0.6) ? 1 : rng.uniform(2, kMaxCols);
  shape.rows = elements / shape.cols;
  if (rng.chance(0.04)) {
    // Outside the profile: no columns, or one too many.
    shape.cols = rng.chance(0.5) ? 0 : kMaxCols + 1;
    shape.rows = std::min<std::int64_t>(shape.rows, static_cast<std::int64_t>(max_bytes / sizeof(float)) / (kMaxCols + 1));
  }
  return shape;
}

Mem draw_mem(Rng& rng) { return static_cast<Mem>(rng.uniform(0, 3)); }

StreamRef draw_stream(Rng& rng, bool capturable) {
  StreamRef ref;
  const std::size_t pick = capturable ? 2 + rng.weighted({55, 45}) : rng.weighted({15, 5, 45, 35});
  ref.source = static_cast<StreamSource>(pick);
  if (ref.source == StreamSource::kCreated) ref.slot = static_cast<int>(rng.uniform(0, kCreatedSlots - 1));
  if (ref.source == StreamSource::kGreen) ref.slot = static_cast<int>(rng.uniform(0, kGreenSlots - 1));
  return ref;
}

/// `capture`: device or pinned memory only, the in-place input on the device, a capturable stream,
/// no caller work, no shared cache.
CallPlan draw_call(Rng& rng, const EngineModel& model, std::size_t max_bytes, bool capture) {
  CallPlan call;
  call.guard = capture || rng.chance(0.6);
  call.stream = draw_stream(rng, capture);
  const bool uniform = rng.chance(0.5);
  const Mem common = capture ? (rng.chance(0.5) ? Mem::kDevice : Mem::kPinned) : draw_mem(rng);
  for (int b = 0; b < model.io_count(); ++b) {
    const BindingRole& role = model.role(b);
    Mem mem = uniform ? common : draw_mem(rng);
    if (capture) {
      mem = uniform ? common : (rng.chance(0.5) ? Mem::kDevice : Mem::kPinned);
      if (role.updated_in_place) mem = Mem::kDevice;
    } else if (role.updated_in_place) {
      // Must be device-resident; host memory now and then, which the delegate must reject.
      const std::array<Mem, 4> kinds = {Mem::kDevice, Mem::kManaged, Mem::kPinned, Mem::kPageable};
      mem = kinds[rng.weighted({45, 45, 5, 5})];
    }
    call.mems.push_back(mem);
    call.hints.push_back(rng.chance(0.25));
  }
  call.shape = draw_shape(rng, max_bytes);
  const EngineSpec& spec = model.spec();
  // A small engine mostly gets shapes it takes (now and then a larger one, which it must refuse).
  if (call.shape.in_profile() && call.shape.rows > spec.max_rows && (capture || rng.chance(0.9))) {
    call.shape.rows = rng.uniform(0, spec.max_rows);
  }
  if (capture && !model.in_profile(call.shape)) call.shape.cols = 1;
  call.data_seed = rng.next();
  call.scribble = rng.chance(0.5);
  call.stale_output_shapes = rng.chance(0.5);
  call.null_empty = rng.chance(0.5);
  if (!capture && rng.chance(0.45)) {
    const std::int64_t spins[] = {20, 200, 2000};
    call.caller_spin_us = spins[rng.weighted({40, 40, 20})];
  }
  if (!capture && spec.in_place() && rng.chance(0.6)) {
    call.shared_cache = true;
    call.shape = spec.cache_shape;
    call.mems[static_cast<std::size_t>(model.cache_binding())] = spec.cache_mem;
  }
  return call;
}

/// A call of the repeat path (Note [repeated calls]): mostly guarded, on a stream object, every
/// tensor device-accessible; sometimes not, where the repeat must not be taken.
CallPlan draw_repeat_call(Rng& rng, const EngineModel& model, std::size_t max_bytes) {
  CallPlan call = draw_call(rng, model, max_bytes, false);
  if (rng.chance(0.8)) {
    call.guard = true;
    if (!call.stream.capturable()) call.stream = draw_stream(rng, /*capturable=*/true);
  }
  if (rng.chance(0.7)) {
    for (Mem& mem : call.mems) mem = rng.chance(0.8) ? Mem::kDevice : Mem::kManaged;
    if (call.shared_cache) call.mems[static_cast<std::size_t>(model.cache_binding())] = model.spec().cache_mem;
  }
  if (call.caller_spin_us == 0) call.caller_spin_us = 20;  // each repeat's new inputs are queued on the stream
  return call;
}

/// A call right after `previous` on its session, on another stream, that returns at once (guarded,
/// device-accessible I/O): made while the previous call is still held back (Executor::call), it
/// must wait for it on the GPU.
CallPlan draw_follow_call(Rng& rng, const EngineModel& model, std::size_t max_bytes, const CallPlan& previous) {
  CallPlan call = draw_repeat_call(rng, model, max_bytes);
  call.guard = true;
  if (previous.shared_cache && rng.chance(0.9)) {
    call.shared_cache = true;  // the next update of the same cache, from another stream
    call.shape = model.spec().cache_shape;
  }
  for (Mem& mem : call.mems) mem = rng.chance(0.8) ? Mem::kDevice : Mem::kManaged;
  if (call.shared_cache) call.mems[static_cast<std::size_t>(model.cache_binding())] = model.spec().cache_mem;
  if (!model.in_profile(call.shape)) call.shape = InputShape{1, 1};
  if (rng.chance(0.15)) {
    call.stream.source = StreamSource::kPerThread;  // a default-stream handle: the session's own stream
  } else {
    call.stream = draw_stream(rng, /*capturable=*/true);
  }
  if (previous.guard && to_string(call.stream) == to_string(previous.stream)) {
    call.stream = StreamRef{StreamSource::kCreated, (previous.stream.slot + 1) % kCreatedSlots};
  }
  return call;
}

/// Makes `call`, drawn by draw_follow_call after `previous`, stage host inputs where `previous` did,
/// with its shape (new values, no caller work): its copies may go to the staging slot `previous`
/// used, whose engine may still read them after `previous` returned, its inputs consumed (Note
/// [pipelined calls]).
void stage_like(const EngineModel& model, const CallPlan& previous, CallPlan& call) {
  call.shape = previous.shape;
  call.shared_cache = previous.shared_cache;
  call.caller_spin_us = 0;
  for (int b = 0; b < model.io_count(); ++b) {
    const std::size_t i = static_cast<std::size_t>(b);
    if (model.staged_input(previous, b)) call.mems[i] = previous.mems[i];
  }
  if (call.shared_cache) call.mems[static_cast<std::size_t>(model.cache_binding())] = model.spec().cache_mem;
}

/// FuzzConfig::green == false: a green-context stream becomes the created stream of its slot.
void without_green(StreamRef& ref) {
  if (ref.source == StreamSource::kGreen) ref.source = StreamSource::kCreated;
}

/// FuzzConfig::green == false, applied to a drawn step (no further draws, so nothing else changes).
void without_green(Step& step) {
  std::visit(Overloaded{
                 [](CallStep& s) { without_green(s.call.stream); },
                 [](CaptureStep& s) { without_green(s.call.stream); },
                 [](ReplayStep&) {},
                 [](ConcurrentStep& s) {
                   for (auto& thread : s.threads) {
                     for (CallPlan& call : thread) without_green(call.stream);
                   }
                 },
                 [](DestroyStep& s) { without_green(s.call.stream); },
                 [](RepeatStep& s) { without_green(s.call.stream); },
                 [](RecreateSessionStep&) {},
                 [](RecreateStreamStep& s) { without_green(s.stream); },
                 [](BadCallStep& s) {
                   without_green(s.call.stream);
                   if (s.kind == BadCallStep::Kind::kGreenCurrentNoGuard) s.kind = BadCallStep::Kind::kWrongDtype;
                 },
             },
             step);
}

}  // namespace

const std::vector<std::size_t>& boundary_sizes() {
  static const std::vector<std::size_t> sizes = {
      0,           4,           256,          kMiB - 4,          kMiB,
      kMiB + 4,    2 * kMiB,    2 * kMiB + 4, 3 * kMiB + 4,      8 * kMiB + 4,
      63 * kMiB,   64 * kMiB - 4, 64 * kMiB,  4096,              kMiB / 2,
  };
  return sizes;
}

std::size_t log_uniform(Rng& rng, std::size_t lo, std::size_t hi) {
  const double a = std::log(static_cast<double>(std::max<std::size_t>(lo, 1)));
  const double b = std::log(static_cast<double>(std::max(hi, lo + 1)));
  return static_cast<std::size_t>(std::exp(a + (b - a) * rng.unit()));
}

std::size_t draw_boundary_size(Rng& rng, std::size_t max_bytes) {
  std::vector<std::size_t> sizes;
  for (std::size_t s : boundary_sizes()) {
    if (s <= max_bytes) sizes.push_back(s);
  }
  return sizes[static_cast<std::size_t>(rng.uniform(0, static_cast<std::int64_t>(sizes.size()) - 1))];
}

Sequence generate(const FuzzConfig& config) {
  Rng rng(config.seed);
  // The draws added after the seed set's soak seeds were found come from a stream of their own, so
  // that those seeds still draw the steps they failed on.
  Rng late(mix(config.seed, 0x51a7ed));
  Sequence sequence;
  sequence.config = config;
  const int sessions = static_cast<int>(rng.uniform(1, 3));
  std::vector<EngineModel> models;
  for (int s = 0; s < sessions; ++s) {
    sequence.sessions.push_back(
        draw_engine(rng, late, config.max_spin_us, std::min(config.max_bytes, config.concurrent_max_bytes)));
    models.emplace_back(sequence.sessions.back());
  }
  std::vector<std::size_t> captures;
  for (int i = 0; i < config.length; ++i) {
    // Now and then a call of the previous call's session on another stream right after it.
    if (!sequence.steps.empty()) {
      const Step& last = sequence.steps.back();
      const auto* call = std::get_if<CallStep>(&last);
      const auto* repeat = std::get_if<RepeatStep>(&last);
      // More often after an update of the shared cache: the next one must land after it.
      const bool shared = (call != nullptr && call->call.shared_cache) || (repeat != nullptr && repeat->call.shared_cache);
      if ((call != nullptr || repeat != nullptr) && rng.chance(shared ? 0.5 : 0.3)) {
        const int session = call != nullptr ? call->session : repeat->session;
        const CallPlan& previous = call != nullptr ? call->call : repeat->call;
        const EngineModel& model = models[static_cast<std::size_t>(session)];
        CallPlan follow = draw_follow_call(rng, model, config.concurrent_max_bytes, previous);
        // Mostly one staging its own after a guarded call that staged host inputs its engine reads late.
        if (previous.guard && model.in_profile(previous.shape) && model.stages_inputs(previous) &&
            model.late_read_us() > 0 && late.chance(0.9)) {
          stage_like(model, previous, follow);
        }
        sequence.steps.push_back(CallStep{session, std::move(follow)});
        continue;
      }
    }
    const int session = static_cast<int>(rng.uniform(0, sessions - 1));
    const EngineModel& model = models[static_cast<std::size_t>(session)];
    switch (rng.weighted({44, 10, 9, 8, 4, 4, 5, 7, 9})) {
      case 0:
        sequence.steps.push_back(CallStep{session, draw_call(rng, model, config.max_bytes, false)});
        break;
      case 1: {
        ConcurrentStep step;
        step.session = session;
        const int threads = static_cast<int>(rng.uniform(2, 4));
        for (int t = 0; t < threads; ++t) {
          std::vector<CallPlan> calls;
          const int count = static_cast<int>(rng.uniform(1, 3));
          for (int c = 0; c < count; ++c) calls.push_back(draw_call(rng, model, config.concurrent_max_bytes, false));
          step.threads.push_back(std::move(calls));
        }
        step.destroy_during = rng.chance(0.2);
        step.destroy_delay_us = static_cast<int>(rng.uniform(0, 3000));
        // A shared cache across threads only where its updates commute (cache += x), and not when the
        // session goes.
        if (step.destroy_during || model.negates_cache()) {
          for (auto& thread : step.threads) {
            for (CallPlan& call : thread) call.shared_cache = false;
          }
        }
        sequence.steps.push_back(std::move(step));
        break;
      }
      case 2: {
        CaptureStep step;
        step.session = session;
        step.call = draw_call(rng, model, config.concurrent_max_bytes, true);
        step.warmup = rng.chance(0.75);
        if (rng.chance(0.4)) {
          std::vector<int> candidates;
          for (int b = 0; b < model.io_count(); ++b) {
            const BindingRole& role = model.role(b);
            if (role.aliased_input < 0 && !role.updated_in_place) candidates.push_back(b);
          }
          step.pageable_probe = candidates[static_cast<std::size_t>(
              rng.uniform(0, static_cast<std::int64_t>(candidates.size()) - 1))];
          step.probe_first = rng.chance(0.5);
        }
        step.replays = static_cast<int>(rng.uniform(1, 3));
        captures.push_back(sequence.steps.size());
        sequence.steps.push_back(std::move(step));
        break;
      }
      case 3: {
        if (captures.empty()) {
          sequence.steps.push_back(CallStep{session, draw_call(rng, model, config.max_bytes, false)});
          break;
        }
        ReplayStep step;
        step.capture_step = captures[static_cast<std::size_t>(rng.uniform(0, static_cast<std::int64_t>(captures.size()) - 1))];
        step.data_seed = rng.next();
        step.times = static_cast<int>(rng.uniform(1, 3));
        sequence.steps.push_back(step);
        break;
      }
      case 4: {
        DestroyStep step;
        step.session = session;
        step.in_flight = rng.chance(0.5);
        step.call = draw_call(rng, model, config.concurrent_max_bytes, false);
        step.call.guard = true;
        step.call.shared_cache = false;
        sequence.steps.push_back(std::move(step));
        break;
      }
      case 5: sequence.steps.push_back(RecreateSessionStep{session}); break;
      case 6: {
        RecreateStreamStep step;
        step.stream = draw_stream(rng, /*capturable=*/true);
        step.non_blocking = rng.chance(0.6);
        sequence.steps.push_back(step);
        break;
      }
      case 8: {
        RepeatStep step;
        step.session = session;
        step.call = draw_repeat_call(rng, model, config.concurrent_max_bytes);
        step.times = static_cast<int>(rng.uniform(2, 4));
        sequence.steps.push_back(std::move(step));
        break;
      }
      default: {
        BadCallStep step;
        step.session = session;
        step.kind = static_cast<BadCallStep::Kind>(rng.uniform(0, 3));
        step.call = draw_call(rng, model, std::min<std::size_t>(config.max_bytes, 4 * kMiB), false);
        if (!model.in_profile(step.call.shape)) step.call.shape = InputShape{1, 1};
        step.call.caller_spin_us = 0;   // the stream is idle before the call: it must be right after it
        step.call.shared_cache = false; // a private cache: it must be left untouched
        if (model.spec().in_place()) step.call.mems[static_cast<std::size_t>(model.cache_binding())] = Mem::kDevice;
        step.call.guard = step.kind != BadCallStep::Kind::kGreenCurrentNoGuard && step.call.guard;
        sequence.steps.push_back(std::move(step));
        break;
      }
    }
  }
  if (!config.green) {
    for (Step& step : sequence.steps) without_green(step);
  }
  return sequence;
}

}  // namespace trtet_test::fuzz
