// A load for --compare: SM-flooding kernels kept queued on one stream by a feeder thread, so the
// SMs that stream can reach stay busy while the model is measured beside it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <thread>

#include "common/status.h"

namespace trtet_run {

namespace ex = torch_tensorrt::executorch_backend;

/// Each kernel: 2 blocks per SM of the device, 1024 threads and ~100 KiB of shared memory per
/// block (so two fill an SM), every block spinning `kernel_us`. Two kernels are kept queued.
class Load {
 public:
  /// Starts feeding `stream` (of `device`) and returns once the first kernel is queued.
  static ex::Result<std::unique_ptr<Load>> start(cudaStream_t stream, int device, int kernel_us);
  /// Stops feeding and waits for the queued kernels (this stream only). Never throws.
  ~Load();
  Load(const Load&) = delete;             // owns a thread
  Load& operator=(const Load&) = delete;  // likewise

  /// Blocks per kernel.
  int blocks() const noexcept { return blocks_; }
  /// Kernels launched so far.
  long long launched() const noexcept { return launched_.load(); }

 private:
  Load(cudaStream_t stream, int device, int blocks, int shared_bytes, long long spin_ns)
      : stream_(stream), device_(device), blocks_(blocks), shared_bytes_(shared_bytes), spin_ns_(spin_ns) {}
  void feed() noexcept;

  cudaStream_t stream_;
  int device_;
  int blocks_;
  int shared_bytes_;
  long long spin_ns_;
  cudaEvent_t events_[2] = {nullptr, nullptr};
  std::atomic<bool> stop_{false};
  std::atomic<long long> launched_{0};
  std::thread thread_;
};

}  // namespace trtet_run
