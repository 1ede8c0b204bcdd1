// An in-place cache update: output "cache_out" aliases input "cache" (cache += x), as a
// Torch-TensorRT KV-cache engine does.
#pragma once

#include <memory>

#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings: 0 "cache", 1 "x" (inputs, profile [min_shape, max_shape]), 2 "cache_out" (cache's
/// shape), alias {output 2, input 0, kind}. spin_us x kernels of spinning come before the update. The kernel writes cache_out = cache + x at the address
/// bound to cache_out: only when the delegate binds it to cache's memory does the cache change.
class AliasingEngine : public CudaTestEngine {
 public:
  static Result<std::unique_ptr<AliasingEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                        ex::engine::AliasKind kind = ex::engine::AliasKind::kKvCacheUpdate,
                                                        const KernelOptions& options = {});

  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

 private:
  AliasingEngine(int device, const Shape& min_shape, const Shape& max_shape, ex::engine::AliasKind kind,
                 const KernelOptions& options);
};

}  // namespace trtet_test
