// out = a*x + b*y over float32 tensors of dynamic shape, with a configurable spin per launch.
#pragma once

#include <cstdint>
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
  /// options().kernels launches of out = a*x + b*y (each spinning spin_us; launch()), then the SM marker.
  Status enqueue(cudaStream_t stream) override;

 protected:
  ElementwiseEngine(int device, const Shape& min_shape, const Shape& max_shape, const KernelOptions& options);
  /// One launch of out = a*x + b*y over n elements (launch_axpby); enqueue() makes options().kernels of them.
  virtual Status launch(const float* x, const float* y, float* out, std::int64_t n, cudaStream_t stream);
};

}  // namespace trtet_test
