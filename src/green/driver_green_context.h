// Move-only owner of a CUDA green context and of the streams made on it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <vector>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::green {

/// A green context (a slice of one device's SMs) and the streams created on it.
///
/// Destruction waits for the work queued on its own streams (never the device, never another green
/// context), destroys those streams, then the context: cuGreenCtxDestroy does not destroy a green
/// context's streams, and a stream outliving its context can no longer even be destroyed.
/// Not thread-safe: one thread at a time may create or destroy streams on one DriverGreenContext.
class DriverGreenContext {
 public:
  DriverGreenContext() noexcept = default;  ///< empty: owns nothing
  ~DriverGreenContext() { reset(); }
  DriverGreenContext(const DriverGreenContext&) = delete;             // one owner per green context and its streams
  DriverGreenContext& operator=(const DriverGreenContext&) = delete;
  DriverGreenContext(DriverGreenContext&& other) noexcept;
  DriverGreenContext& operator=(DriverGreenContext&& other) noexcept;

  /// A green context on runtime device `device` with the resources of `desc` (from
  /// cuDevResourceGenerateDesc). The device's primary context must be initialised (split_device()
  /// does it). kInvalidArgument for a bad device index; kInternal for a driver failure.
  static Result<DriverGreenContext> create(int device, CUdevResourceDesc desc);

  /// A new non-blocking stream (CU_STREAM_NON_BLOCKING) on this green context, owned by it: valid
  /// until destroy_stream() or this object's destruction. `priority`: lower is higher, clamped by
  /// the driver to the device's range. kInvalidState on an empty object.
  Result<cudaStream_t> make_stream(int priority = 0);

  /// Waits for and destroys a stream made by make_stream(); kNotFound if this object does not own it.
  Status destroy_stream(cudaStream_t stream);

  /// The SMs actually granted (cuGreenCtxGetDevResource); 0 when empty.
  unsigned sm_count() const noexcept { return sm_count_; }
  /// The runtime device index; -1 when empty.
  int device() const noexcept { return device_; }
  /// The raw handle, still owned by this object (nullptr when empty).
  CUgreenCtx get() const noexcept { return context_; }
  /// The owned streams, in creation order, still owned by this object.
  const std::vector<CUstream>& streams() const noexcept { return streams_; }
  /// The CUcontext of this green context (cuCtxFromGreenCtx), for cuCtxSetCurrent and CUcontext APIs.
  Result<CUcontext> as_context() const;

  explicit operator bool() const noexcept { return context_ != nullptr; }

  /// What release() hands over: the caller must destroy `streams` before `context`.
  struct Released {
    CUgreenCtx context = nullptr;
    std::vector<CUstream> streams;
  };
  /// Gives up ownership of the context and its streams; leaves this object empty.
  Released release() noexcept;

  /// Waits for the owned streams, destroys them, then the context (no-throw; failures are logged).
  void reset() noexcept;

 private:
  DriverGreenContext(CUgreenCtx context, int device, unsigned sm_count) noexcept
      : context_(context), device_(device), sm_count_(sm_count) {}

  CUgreenCtx context_ = nullptr;
  int device_ = -1;
  unsigned sm_count_ = 0;
  std::vector<CUstream> streams_;
};

}  // namespace torch_tensorrt::executorch_backend::green
