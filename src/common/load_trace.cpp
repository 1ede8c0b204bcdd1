#include "common/load_trace.h"

namespace torch_tensorrt::executorch_backend {

// Note [load trace]: a load's cost is spread over layers (the backend's blob parse and engine
// creation, the session's events, stream and staging, the first call's growth), and the
// cold-start benchmark wants each step's share without a profiler. A benchmark sets a LoadTrace
// on its thread around Module::load_method and the first forward(); the steps below record into it.
// Without a trace, a step reads one thread-local pointer and tests it. Steps are placed on the load
// path and on the branches of a call that grow something (staging, chunk events), never on the
// steady execute path. ExecuTorch calls init and execute on the caller's thread, so the trace sees
// them; what the copy pool's workers do is not timed (they are timed by the caller's wait).
namespace {
thread_local LoadTrace* t_trace = nullptr;
}  // namespace

void LoadTrace::add(const char* name, std::uint64_t ns) {
  try {
    steps_.push_back(LoadStep{name, ns});
  } catch (...) {
    // A benchmark's bookkeeping: a step that cannot be kept is dropped, never an error of the load.
  }
}

std::uint64_t LoadTrace::total_ns(const std::string& name) const noexcept {
  std::uint64_t total = 0;
  for (const LoadStep& step : steps_) total += name == step.name ? step.ns : 0;
  return total;
}

LoadTrace* load_trace() noexcept { return t_trace; }

void set_load_trace(LoadTrace* trace) noexcept { t_trace = trace; }

}  // namespace torch_tensorrt::executorch_backend
