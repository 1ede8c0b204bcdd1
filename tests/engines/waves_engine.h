// An engine whose time follows the SMs it gets, with a known answer: out = a*x + b*y (the
// elementwise bindings), computed by a grid of `blocks` blocks that each hold an SM's shared
// memory (so one block runs per SM at a time) and spin `spin_us`. On s SMs a launch takes about
// ceil(blocks / (s * resident_per_sm())) * spin_us: the blocks run in waves of s. trtet-plan's
// tests and demo plan partitions for it (tests/plan), where the best plan is known in advance.
#pragma once

#include <memory>

#include "engines/elementwise_engine.h"

namespace trtet_test {

/// Bindings as ElementwiseEngine: 0 "x", 1 "y" (inputs), 2 "out" (x's shape).
class WavesEngine : public ElementwiseEngine {
 public:
  /// `blocks` >= 1 blocks per launch; options.spin_us per block; options.kernels launches per enqueue.
  static Result<std::unique_ptr<WavesEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                     int blocks, const KernelOptions& options = {});

  int blocks() const noexcept { return blocks_; }
  /// Blocks of this kernel that fit on one SM at once (1 where the device's shared memory allows
  /// pinning it; the CUDA occupancy calculator's count otherwise).
  int resident_per_sm() const noexcept { return resident_per_sm_; }
  /// The kernel time on `sms` SMs the engine is built to take: ceil(blocks / (sms * resident)) * spin_us
  /// per launch, times kernels (launch overhead not counted).
  double expected_us(unsigned sms) const noexcept;

 protected:
  /// One launch of the waves kernel; ElementwiseEngine::enqueue() makes options().kernels of them,
  /// then the SM marker (record_sms).
  Status launch(const float* x, const float* y, float* out, std::int64_t n, cudaStream_t stream) override;

 private:
  WavesEngine(int device, const Shape& min_shape, const Shape& max_shape, int blocks, const KernelOptions& options);
  Status init_kernel();

  int blocks_;
  int shared_bytes_ = 0;
  int resident_per_sm_ = 1;
};

/// The waves kernel's occupancy on `device`: blocks that fit on one SM, and the dynamic shared
/// memory per block that pins it to one (0 where the device cannot). Sets the kernel's shared
/// memory attribute. kInternal for a CUDA failure.
Result<std::pair<int, int>> waves_occupancy(int device);

}  // namespace trtet_test
