// out = a*x + b*y over float32 tensors of dynamic shape, with a configurable spin per launch.
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings: 0 "x", 1 "y" (inputs, profile [min_shape, max_shape]), 2 "out" (x's shape).
/// infer_shapes() fails (kInvalidArgument) when x and y shapes differ.
class ElementwiseEngine : public CudaTestEngine {
 public:
  static Result<std::unique_ptr<ElementwiseEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                           const KernelOptions& options = {});

  Result<int> infer_shapes() override;
  /// options().kernels launches of out = a*x + b*y (each spinning spin_us), then the SM marker.
  Status enqueue(cudaStream_t stream) override;

 protected:
  ElementwiseEngine(int device, const Shape& min_shape, const Shape& max_shape, const KernelOptions& options);
};

}  // namespace trtet_test
