// One input, several outputs: out_k = (k + 1) * x. For calls that move many large outputs at once
// (a call may need more pageable output chunks, all outputs together, than one tensor has events
// for).
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings: 0 "x" (input, profile [min_shape, max_shape]), then outputs "out0", "out1", ... of x's
/// shape; output k (binding k + 1) is (k + 1) * x. spin_us: the last kernel spins that long.
class MultiOutputEngine : public CudaTestEngine {
 public:
  /// `outputs` >= 1; kInvalidArgument otherwise.
  static Result<std::unique_ptr<MultiOutputEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                           int outputs, const KernelOptions& options = {});

  int output_count() const noexcept { return io_count() - 1; }
  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

 private:
  MultiOutputEngine(int device, const Shape& min_shape, const Shape& max_shape, int outputs,
                    const KernelOptions& options);
};

}  // namespace trtet_test
