// The fuzzer's engine for "every output is compared", "aliases among several outputs" and "the
// profile the call selected": 1 to 4 outputs, one of which may update an input in place, and
// coefficients that follow the selected optimization profile.
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings (inputs first): 0 "x", 1 "y", with an alias 2 "cache", with a side dtype "t" of that
/// dtype (each with the bounds [min_shape, max_shape] of profile 0; more with add_profile), then
/// the plain outputs "out0".. with out_j = coefficient_a(j) * x + coefficient_b(j, p) * y (x's
/// shape, p the selected profile), then with an alias "cache_out", aliased to "cache"
/// (kKvCacheUpdate): cache = x - cache, an update whose result depends on the order of the calls
/// (AliasingEngine's cache += x does not), then with a side dtype "t_out": t's bytes XOR kXorByte.
/// x, y, cache and the plain outputs are float32.
/// Each enqueue first spins options.spin_us (one block), so a delegate that returns before the
/// engine is done is caught reading its outputs.
class FuzzOutputsEngine : public CudaTestEngine {
 public:
  static constexpr int kMaxOutputs = 4;
  /// What outputs it has: 1 <= plain + (alias ? 1 : 0) <= kMaxOutputs.
  struct Outputs {
    int plain = 1;
    bool alias = false;
    DataType side = DataType::kFloat32;  ///< "t" and "t_out" of this dtype; none for float32
    bool has_side() const noexcept { return side != DataType::kFloat32; }
  };

  static Result<std::unique_ptr<FuzzOutputsEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                           Outputs outputs, const KernelOptions& options = {});

  /// The coefficients of plain output j under profile p: distinct per output and per profile, so
  /// swapped outputs and a call run under the wrong profile are caught (exact in float).
  static float coefficient_a(int j) noexcept { return 1.0f + static_cast<float>(j); }
  static float coefficient_b(int j, int profile) noexcept {
    return 0.5f - static_cast<float>(j) + 0.25f * static_cast<float>(profile);
  }

  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

 private:
  FuzzOutputsEngine(int device, const Shape& min_shape, const Shape& max_shape, Outputs outputs,
                    const KernelOptions& options);
  int input_count() const noexcept { return 2 + (outputs_.alias ? 1 : 0) + (outputs_.has_side() ? 1 : 0); }

  Outputs outputs_;
};

}  // namespace trtet_test
