// A reduction whose output the engine reports as [1] (TensorRT has no 0-d outputs), for the
// delegate's "0-d output accepted where the engine reports [1]" rule.
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings: 0 "x" (input, profile [min_shape, max_shape]), 1 "total" (output, reported [1]):
/// total = sum of x, in a fixed order.
class SumEngine : public CudaTestEngine {
 public:
  static Result<std::unique_ptr<SumEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                   const KernelOptions& options = {});

  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

 private:
  SumEngine(int device, const Shape& min_shape, const Shape& max_shape, const KernelOptions& options);
};

}  // namespace trtet_test
