// Move-only owner of a memory pool of pinned host memory, for stream-ordered host staging.
#pragma once

#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// A cudaMemPool_t located on the host: allocations from it (DeviceBuffer::allocate_from) are
/// page-locked host memory that the device reads and writes at full copy bandwidth, allocated
/// and freed in stream order. Unlike cudaHostAlloc/cudaFreeHost, freeing never synchronizes the
/// device, so staging can grow while other green contexts run.
class HostMemoryPool {
 public:
  HostMemoryPool() noexcept = default;  ///< empty: owns nothing
  ~HostMemoryPool() { reset(); }
  HostMemoryPool(const HostMemoryPool&) = delete;             // one owner per pool
  HostMemoryPool& operator=(const HostMemoryPool&) = delete;
  HostMemoryPool(HostMemoryPool&& other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
  HostMemoryPool& operator=(HostMemoryPool&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = other.pool_;
      other.pool_ = nullptr;
    }
    return *this;
  }

  /// A pool of pinned host memory usable from `device`. kNotSupported where the device has no
  /// host memory pools (cudaDevAttrHostMemoryPoolsSupported; CUDA 12.6+ drivers).
  static Result<HostMemoryPool> create(int device);

  cudaMemPool_t get() const noexcept { return pool_; }
  explicit operator bool() const noexcept { return pool_ != nullptr; }
  /// Destroys the pool; memory still allocated from it is released once freed (no-throw).
  void reset() noexcept;

 private:
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
