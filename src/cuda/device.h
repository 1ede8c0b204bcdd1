// Device presence and the device guard.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// The number of CUDA devices; kNoDevice (with CUDA's reason) where there is none or no driver.
Result<int> device_count();

/// Ok when `device` names a visible device; kInvalidArgument otherwise.
Status check_device_index(int device);

/// Makes a device current for a scope and restores the caller's context (the same context, green or
/// primary) on exit.
/// Does nothing (and touches no context) when the device is already current.
class DeviceGuard {
 public:
  /// Switches to `device`; status() reports a failure, in which case nothing was changed.
  explicit DeviceGuard(int device) noexcept;
  ~DeviceGuard();
  DeviceGuard() = delete;                               // a guard must name the device it selects
  DeviceGuard(const DeviceGuard&) = delete;              // two owners would restore twice
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  DeviceGuard(DeviceGuard&&) = delete;                   // the restore belongs to this scope
  DeviceGuard& operator=(DeviceGuard&&) = delete;

  const Status& status() const noexcept { return status_; }

 private:
  int previous_ = -1;
  CUcontext previous_context_ = nullptr;  ///< restored as it was (it may be a green context)
  bool switched_ = false;
  Status status_;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
