// The CUDA half of the test engines: a private stream for housekeeping, device buffers made at
// construction (stream-ordered, never cudaMalloc/cudaFree), and SM recording.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "cuda/device_buffer.h"
#include "engines/test_engine.h"

namespace trtet_test {

/// What every kernel engine can be asked to do besides its arithmetic.
struct KernelOptions {
  float a = 2.0f;              ///< first coefficient (elementwise: out = a*x + b*y)
  float b = -0.5f;             ///< second coefficient
  std::int64_t spin_us = 0;    ///< each kernel launch lasts at least this long (block 0 spins)
  int kernels = 1;             ///< kernel launches per enqueue on the main stream (idempotent repeats)
  bool record_sms = false;     ///< kernels record %smid; each enqueue also launches a saturating marker
  /// With record_sms: the marker only while a probe is on (from clear_recorded_sms() to the next
  /// recorded_sms()), so calls outside a probe run the engine's own kernels alone.
  bool marker_on_request = false;
  bool fault = false;          ///< elementwise: fault_if given (an illegal write when x[0] == fault_if)
  float fault_if = 0.0f;       ///< the value of x[0] that makes the enqueue's last kernel fault
};

/// Base of the engines made of real kernels. Construction (create() of a subclass) allocates on a
/// private stream and synchronizes only that stream; destruction frees in order on it and never
/// synchronizes. enqueue never allocates or synchronizes.
class CudaTestEngine : public TestEngine {
 public:
  ~CudaTestEngine() override;
  CudaTestEngine(const CudaTestEngine&) = delete;             // owns device buffers and a stream
  CudaTestEngine& operator=(const CudaTestEngine&) = delete;

  const KernelOptions& options() const noexcept { return options_; }
  bool records_sms() const noexcept { return options_.record_sms; }
  /// Forgets the SMs recorded so far, and starts a probe (marker_on_request). The engine must be
  /// idle (its streams synchronized).
  Status clear_recorded_sms();
  /// The SM ids (sorted, unique) the engine's kernels ran on since the last clear, and ends a probe
  /// (marker_on_request). The engine's work must be complete (synchronize the stream first).
  /// kInvalidState without record_sms.
  Result<std::vector<int>> recorded_sms() const;
  /// The device's SM count (for tests sizing things).
  int device_sm_count() const noexcept { return device_sms_; }

 protected:
  CudaTestEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases, int device,
                 const KernelOptions& options);
  /// Makes the private stream, the SM flags (when recording) and `scratch_count` scratch buffers of
  /// `scratch_bytes` each, then synchronizes the private stream. Call once from create().
  Status init_resources(std::size_t scratch_bytes = 0, int scratch_count = 0);
  /// Launches the saturating SM marker on `stream` when recording (else nothing).
  Status mark_sms(cudaStream_t stream);
  int* sm_flags() const noexcept { return static_cast<int*>(flags_.data()); }
  float* scratch(int i) const noexcept { return static_cast<float*>(scratch_[static_cast<std::size_t>(i)].data()); }
  /// Spin per kernel in nanoseconds.
  std::int64_t spin_ns() const noexcept { return options_.spin_us * 1000; }

  KernelOptions options_;
  cudaStream_t private_stream_ = nullptr;
  int device_sms_ = 0;

 private:
  ex::cuda::DeviceBuffer flags_;
  mutable std::atomic<bool> probing_{false};  ///< marker_on_request: a probe is on
  std::vector<ex::cuda::DeviceBuffer> scratch_;
};

}  // namespace trtet_test
