// A test engine with 1 to 4 outputs, one of which may update an input in place: the fuzzer's
// engine for "every output is compared" and "aliases among several outputs".
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings (every dtype float32, inputs first):
///   0 "x", 1 "y" (inputs, profile [min_shape, max_shape]); with `alias`, 2 "cache" (same profile);
///   then `plain_outputs` outputs "out0".. with out_j = coefficient_a(j) * x + coefficient_b(j) * y
///   (x's shape); with `alias`, last, "cache_out" aliased to "cache" (kKvCacheUpdate): cache += x.
/// 1 <= plain_outputs + alias <= 4. Each enqueue first spins options.spin_us (one block), so a
/// delegate that returns before the engine is done is caught reading its outputs.
class FuzzOutputsEngine : public CudaTestEngine {
 public:
  static constexpr int kMaxOutputs = 4;

  static Result<std::unique_ptr<FuzzOutputsEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                           int plain_outputs, bool alias,
                                                           const KernelOptions& options = {});

  /// The coefficients of plain output j: distinct per output, so swapped outputs are caught.
  static float coefficient_a(int j) noexcept { return 1.0f + static_cast<float>(j); }
  static float coefficient_b(int j) noexcept { return 0.5f - static_cast<float>(j); }

  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

  int plain_outputs() const noexcept { return plain_outputs_; }
  bool has_alias() const noexcept { return alias_; }

 private:
  FuzzOutputsEngine(int device, const Shape& min_shape, const Shape& max_shape, int plain_outputs, bool alias,
                    const KernelOptions& options);
  int input_count() const noexcept { return alias_ ? 3 : 2; }

  int plain_outputs_;
  bool alias_;
};

}  // namespace trtet_test
