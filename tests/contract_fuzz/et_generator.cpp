#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/rng.h"

namespace trtet_test::fuzz {
namespace {


InputShape draw_shape(Rng& rng, std::size_t max_bytes) {
  max_bytes = std::min(max_bytes, kEtBoundBytes);
  std::size_t bytes = 0;
  switch (rng.weighted({30, 40, 30})) {
    case 0: {
      bytes = draw_boundary_size(rng, max_bytes);
      break;
    }
    case 1: bytes = log_uniform(rng, 4, std::min<std::size_t>(64 * 1024, max_bytes)); break;
    default: bytes = log_uniform(rng, 64 * 1024, max_bytes); break;
  }
  bytes = std::min(bytes, max_bytes);
  const std::int64_t elements = static_cast<std::int64_t>(bytes / sizeof(float));
  InputShape shape;
  switch (rng.weighted({50, 25, 25})) {
    case 0: shape.cols = 1; break;
    case 1: shape.cols = rng.uniform(2, 8); break;
    default: shape.cols = rng.uniform(2, kEtMaxCols); break;
  }
  shape.rows = elements / shape.cols;
  if (rng.chance(0.05)) {
    // Outside the profile, inside the program's bound (ExecuTorch accepts it, the delegate must not).
    shape.cols = rng.chance(0.5) ? 0 : kEtMaxCols + 1;
    shape.rows = elements / std::max<std::int64_t>(shape.cols, 1);
  }
  return shape;
}

Mem draw_mem(Rng& rng) {
  static constexpr Mem kinds[] = {Mem::kDevice, Mem::kPinned, Mem::kPageable, Mem::kManaged};
  return kinds[rng.weighted({35, 25, 30, 10})];
}

StreamRef draw_stream(Rng& rng) {
  StreamRef ref;
  ref.source = static_cast<StreamSource>(rng.weighted({15, 5, 45, 35}));
  if (ref.source == StreamSource::kCreated) ref.slot = static_cast<int>(rng.uniform(0, kCreatedSlots - 1));
  if (ref.source == StreamSource::kGreen) ref.slot = static_cast<int>(rng.uniform(0, kGreenSlots - 1));
  return ref;
}

EtCallPlan draw_call(Rng& rng, EtProgram program, std::size_t max_bytes) {
  EtCallPlan call;
  call.guard = rng.chance(0.6);
  call.stream = draw_stream(rng);
  const bool uniform = rng.chance(0.5);
  const Mem common = draw_mem(rng);
  for (int b = 0; b < 3; ++b) {
    const Mem mem = uniform ? common : draw_mem(rng);
    call.mems.push_back(is_planned(program) ? Mem::kPageable : mem);
  }
  call.shape = draw_shape(rng, max_bytes);
  call.data_seed = rng.next();
  call.repeats = static_cast<int>(rng.weighted({70, 20, 10})) + 1;
  call.scribble = rng.chance(0.5);
  call.unload_after = rng.chance(0.1);
  return call;
}

/// FuzzConfig::green == false: a green-context stream becomes the created stream of its slot.
void without_green(EtCallPlan& call) {
  if (call.stream.source == StreamSource::kGreen) call.stream.source = StreamSource::kCreated;
}

EtProgram draw_program(Rng& rng) { return static_cast<EtProgram>(rng.weighted({15, 25, 15, 15, 15, 15})); }

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

const char* to_string(EtProgram program) noexcept {
  switch (program) {
    case EtProgram::kPlanned: return "planned";
    case EtProgram::kUnplanned: return "unplanned";
    case EtProgram::kUnplannedAux: return "unplanned-aux";
    case EtProgram::kDevicePlanned: return "device-planned";
    case EtProgram::kCpuOps: return "cpu-ops";
    case EtProgram::kTwoDelegates: return "two-delegates";
  }
  return "?";
}

float et_reference(EtProgram program, float x, float y, float* tolerance) noexcept {
  const double dx = x, dy = y;
  double result = 2 * dx - 0.5 * dy;
  double terms = 2 * std::fabs(dx) + 0.5 * std::fabs(dy);  // the largest terms rounded along the way
  if (program == EtProgram::kCpuOps) {
    result = 2 * (dx + dx) - 0.5 * dy + dy;
    terms = 4 * std::fabs(dx) + 1.5 * std::fabs(dy);
  } else if (program == EtProgram::kTwoDelegates) {
    result = 2 * (2 * (dx + dx) - 0.5 * dy) - 0.5 * dy + dy;
    terms = 8 * std::fabs(dx) + 2.5 * std::fabs(dy);
  }
  *tolerance = static_cast<float>(1e-5 * terms + 1e-6);
  return static_cast<float>(result);
}

const char* program_file(EtProgram program) noexcept {
  switch (program) {
    case EtProgram::kPlanned: return "fuzz_planned.pte";
    case EtProgram::kUnplanned: return "fuzz_unplanned.pte";
    case EtProgram::kUnplannedAux: return "fuzz_unplanned_aux.pte";
    case EtProgram::kDevicePlanned: return "fuzz_device_planned.pte";
    case EtProgram::kCpuOps: return "fuzz_cpu_ops.pte";
    case EtProgram::kTwoDelegates: return "fuzz_two_delegates.pte";
  }
  return "?";
}

std::string to_string(const EtCallPlan& call) {
  std::ostringstream out;
  out << (call.guard ? "guard=" + to_string(call.stream) : std::string("no-guard")) << " mems(x,y,out)=[";
  for (std::size_t i = 0; i < call.mems.size(); ++i) out << (i ? "," : "") << to_string(call.mems[i]);
  out << "] shape=[" << call.shape.rows << "," << call.shape.cols << "] (" << call.shape.numel() * 4
      << " B per tensor" << (et_in_profile(call.shape) ? "" : ", outside the profile") << ") data=" << hex(call.data_seed);
  if (call.repeats > 1) out << " x" << call.repeats;
  if (call.scribble) out << " scribble";
  if (call.unload_after) out << " unload-after";
  return out.str();
}

std::string to_string(const EtStep& step) {
  return std::visit(Overloaded{
                        [](const EtCallStep& s) { return "call m" + std::to_string(s.module) + " " + to_string(s.call); },
                        [](const EtUnloadStep& s) {
                          return std::string(s.remake ? "remake-module m" : "unload-method m") + std::to_string(s.module);
                        },
                        [](const EtThreadsStep& s) {
                          std::string text = "threads=" + std::to_string(s.threads.size()) + " (a Module each)";
                          for (std::size_t t = 0; t < s.threads.size(); ++t) {
                            text += "\n        t" + std::to_string(t) + " " + to_string(s.threads[t].program) + ":";
                            for (const EtCallPlan& call : s.threads[t].calls) text += "\n          " + to_string(call);
                          }
                          return text;
                        },
                    },
                    step);
}

EtSequence generate_et(const FuzzConfig& config) {
  Rng rng(mix(config.seed, 0xe7));  // not the Session leg's draws for the same seed
  EtSequence sequence;
  sequence.config = config;
  sequence.config.leg = Leg::kExecuTorch;
  const int modules = static_cast<int>(rng.uniform(1, 3));
  for (int m = 0; m < modules; ++m) sequence.modules.push_back(draw_program(rng));
  for (int i = 0; i < config.length; ++i) {
    const int module = static_cast<int>(rng.uniform(0, modules - 1));
    switch (rng.weighted({65, 15, 20})) {
      case 0:
        sequence.steps.push_back(
            EtCallStep{module, draw_call(rng, sequence.modules[static_cast<std::size_t>(module)], config.max_bytes)});
        break;
      case 1: sequence.steps.push_back(EtUnloadStep{module, rng.chance(0.5)}); break;
      default: {
        EtThreadsStep step;
        const int threads = static_cast<int>(rng.uniform(2, 4));
        for (int t = 0; t < threads; ++t) {
          EtThread thread;
          thread.program = draw_program(rng);
          const int calls = static_cast<int>(rng.uniform(1, 3));
          for (int c = 0; c < calls; ++c) thread.calls.push_back(draw_call(rng, thread.program, config.concurrent_max_bytes));
          step.threads.push_back(std::move(thread));
        }
        sequence.steps.push_back(std::move(step));
        break;
      }
    }
  }
  if (!config.green) {  // after every draw, so nothing else changes
    for (EtStep& step : sequence.steps) {
      if (auto* call = std::get_if<EtCallStep>(&step)) without_green(call->call);
      if (auto* threads = std::get_if<EtThreadsStep>(&step)) {
        for (EtThread& thread : threads->threads) {
          for (EtCallPlan& plan : thread.calls) without_green(plan);
        }
      }
    }
  }
  return sequence;
}

}  // namespace trtet_test::fuzz
