// Host times of the steps of a load and of a session's first calls, for the cold-start benchmark
// (bench/cold_start.cpp; docs/PERFORMANCE.md, cold_start). Off unless a thread sets a trace: each
// step then costs one thread-local read and a null test, and none sits on the steady execute path
// (Note [load trace] in load_trace.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// One timed step: its name (a string literal) and its host time.
struct LoadStep {
  const char* name;
  std::uint64_t ns;
};

/// The steps recorded on one thread while it was set as that thread's trace, in order.
class LoadTrace {
 public:
  void add(const char* name, std::uint64_t ns);
  const std::vector<LoadStep>& steps() const noexcept { return steps_; }
  /// The sum of the steps called `name` (0 where none was recorded).
  std::uint64_t total_ns(const std::string& name) const noexcept;
  void clear() noexcept { steps_.clear(); }

 private:
  std::vector<LoadStep> steps_;
};

/// The calling thread's trace, or null (the default).
LoadTrace* load_trace() noexcept;
/// Sets (or, with null, clears) the calling thread's trace; the caller keeps it alive meanwhile.
void set_load_trace(LoadTrace* trace) noexcept;

/// Times the scope it lives in as step `name` of the thread's trace, if one is set.
class TimedStep {
 public:
  explicit TimedStep(const char* name) noexcept : trace_(load_trace()), name_(name) {
    if (trace_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~TimedStep() {
    if (trace_ != nullptr) {
      trace_->add(name_, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                        std::chrono::steady_clock::now() - start_)
                                                        .count()));
    }
  }
  TimedStep(const TimedStep&) = delete;  // one scope, one step
  TimedStep& operator=(const TimedStep&) = delete;

 private:
  LoadTrace* trace_;
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace torch_tensorrt::executorch_backend
