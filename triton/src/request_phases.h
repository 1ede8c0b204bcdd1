// Where a request's host time goes in the backend (Note [request phases]): the phases, the points
// that end them, and the per-instance sums flushed every kPhaseFlushEvery requests. Pure arithmetic,
// no server call: InstanceMetrics (gpu_time.h) turns a flush into counter increments.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trtet_triton {

// Note [request phases]
// ---------------------
// Where a request's time in the backend goes, on the host clock, every successful request, in the
// order the backend spends it. Triton's compute input is response_new + inputs + outputs, compute
// infer is execute + stream_wait + late_outputs, compute output is send; release comes after the
// end the backend reports (statistics, the controller's sample, the GPU-time flush, the request's
// release): outside Triton's figures, but the instance serves nothing else meanwhile.
//   response_new   from the batch's start (the first request) or the previous request's end
//   inputs         each input checked and bound to the method
//   outputs        each output's buffer (the response's, or a scratch) bound; the plan set's stream
//   execute        Module::execute under the stream guard (with host I/O it returns with outputs
//                  written, so this holds the GPU work too)
//   stream_wait    the instance's wait for its stream (stream_wait)
//   late_outputs   dynamic and planned outputs copied into the response, and their wait
//   send           TRITONBACKEND_ResponseSend (the frontend's work on the response, in this thread;
//                  with send_from completion_thread, the hand-over and the send on that thread:
//                  Note [sending from a completion thread])
//   release        statistics reported, the controller's sample, the request released
// and, not in that sequence but a part of execute:
//   method         ExecuTorch's Method::execute (the program's instructions, the delegate's call
//                  among them), timed by the instance's tracer from the event ExecuTorch opens
//                  for it at every profiling level; execute - method is Module::execute's own
//                  work and the stream guard. 0 where the instance has no tracer (gpu_time_every 0).
// Sums are kept per instance and added to the counters every kPhaseFlushEvery requests (one
// increment per phase then, not per request): trtet_request_phase_duration_us{phase} and
// trtet_request_phase_requests, labels model, version, instance and gpu as the GPU times'.
enum class Phase : std::size_t {
  kResponseNew, kInputs, kOutputs, kExecute, kStreamWait, kLateOutputs, kSend, kRelease, kMethod, kCount
};
constexpr std::size_t kPhases = static_cast<std::size_t>(Phase::kCount);
constexpr std::uint64_t kPhaseFlushEvery = 32;
const char* phase_name(Phase phase);

// The host-clock points of one request (ns, now_ns()): each phase ends at its point; zero where
// the request did not get that far.
struct RequestPoints {
  std::uint64_t start = 0, response_new = 0, inputs = 0, outputs = 0, execute = 0, stream_wait = 0, late_outputs = 0,
                send = 0, release = 0;
  std::uint64_t method_ns = 0;  // Method::execute's duration (the method phase), not a point
};

// What one flush adds to the counters: microseconds per phase and the requests they cover.
struct PhaseFlush {
  double us[kPhases] = {};
  std::uint64_t requests = 0;
};

// One instance's running sums.
class PhaseSums {
 public:
  // A successful request's points (every point set; a point before the one it follows, which a
  // clock does not give, counts 0). True when the sums are due to be flushed.
  bool add(const RequestPoints& p) noexcept;
  // The sums so far, and zero again; requests 0 when there was nothing.
  PhaseFlush take() noexcept;

 private:
  std::uint64_t ns_[kPhases] = {};
  std::uint64_t count_ = 0;
};

}  // namespace trtet_triton
