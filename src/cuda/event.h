// Move-only owner of a cudaEvent_t.
#pragma once

#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

class Event {
 public:
  Event() noexcept = default;  ///< empty: owns nothing
  ~Event() { reset(); }
  Event(const Event&) = delete;             // one owner per handle
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(other.release()) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      event_ = other.release();
    }
    return *this;
  }

  /// A new event on the current device; cudaEventDisableTiming unless timing is asked for.
  static Result<Event> create(unsigned int flags = cudaEventDisableTiming);

  /// Records on `stream` (legal during stream capture: the record joins the graph).
  Status record(cudaStream_t stream);
  /// True once the recorded work has completed; an error if the query failed.
  Result<bool> query() const;
  /// Blocks the calling thread until the recorded work completes.
  Status synchronize() const;

  cudaEvent_t get() const noexcept { return event_; }
  explicit operator bool() const noexcept { return event_ != nullptr; }
  cudaEvent_t release() noexcept {
    cudaEvent_t event = event_;
    event_ = nullptr;
    return event;
  }
  /// Destroys the owned event (no-throw; failures are logged).
  void reset() noexcept;

 private:
  explicit Event(cudaEvent_t event) noexcept : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
