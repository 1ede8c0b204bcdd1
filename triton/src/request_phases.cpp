#include "request_phases.h"

namespace trtet_triton {

// ---- where a request's time goes (Note [request phases], request_phases.h) ----

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kResponseNew: return "response_new";
    case Phase::kInputs: return "inputs";
    case Phase::kOutputs: return "outputs";
    case Phase::kExecute: return "execute";
    case Phase::kStreamWait: return "stream_wait";
    case Phase::kLateOutputs: return "late_outputs";
    case Phase::kSend: return "send";
    case Phase::kRelease: return "release";
    case Phase::kMethod: return "method";
    case Phase::kCount: break;
  }
  return "?";
}

bool PhaseSums::add(const RequestPoints& p) noexcept {
  const std::uint64_t points[] = {p.start,       p.response_new, p.inputs, p.outputs, p.execute,
                                  p.stream_wait, p.late_outputs, p.send,   p.release};
  for (std::size_t i = 0; i + 1 < sizeof points / sizeof points[0]; ++i) {
    ns_[i] += points[i + 1] >= points[i] ? points[i + 1] - points[i] : 0;
  }
  ns_[static_cast<std::size_t>(Phase::kMethod)] += p.method_ns;
  return ++count_ >= kPhaseFlushEvery;
}

PhaseFlush PhaseSums::take() noexcept {
  PhaseFlush flush;
  for (std::size_t i = 0; i < kPhases; ++i) {
    flush.us[i] = static_cast<double>(ns_[i]) / 1e3;
    ns_[i] = 0;
  }
  flush.requests = count_;
  count_ = 0;
  return flush;
}

}  // namespace trtet_triton
