// Move-only owner of a memory pool of device memory, and what any pool holds (its own statistics).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// What a memory pool holds, from the pool's own counters (cudaMemPoolGetAttribute).
struct PoolUsage {
  std::uint64_t reserved = 0;       ///< backing memory the pool holds now (cudaMemPoolAttrReservedMemCurrent)
  std::uint64_t used = 0;           ///< of that, in use by allocations now (cudaMemPoolAttrUsedMemCurrent)
  std::uint64_t reserved_high = 0;  ///< the most it ever held (cudaMemPoolAttrReservedMemHigh)
  std::uint64_t used_high = 0;      ///< the most ever in use (cudaMemPoolAttrUsedMemHigh)
};

/// `pool`'s counters. Reads only; safe at any time, also while a stream is captured.
Result<PoolUsage> pool_usage(cudaMemPool_t pool);

/// A cudaMemPool_t of device memory on one device, made for one owner so that the pool's counters
/// are exactly what that owner holds: allocations from it (DeviceBuffer::allocate_from) are
/// stream-ordered like cudaMallocAsync's, and never share backing memory with the device's default
/// pool. Freed memory stays reserved in the pool (release threshold: all of it) until the pool is
/// destroyed: giving it back at synchronizations and mapping it again on the next growth costs
/// more than it saves for staging, which only grows.
class DeviceMemoryPool {
 public:
  DeviceMemoryPool() noexcept = default;  ///< empty: owns nothing
  ~DeviceMemoryPool() { reset(); }
  DeviceMemoryPool(const DeviceMemoryPool&) = delete;             // one owner per pool
  DeviceMemoryPool& operator=(const DeviceMemoryPool&) = delete;
  DeviceMemoryPool(DeviceMemoryPool&& other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
  DeviceMemoryPool& operator=(DeviceMemoryPool&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = other.pool_;
      other.pool_ = nullptr;
    }
    return *this;
  }

  /// A pool of `device`'s memory. kNotSupported where the device has no memory pools
  /// (cudaDevAttrMemoryPoolsSupported), which also means no cudaMallocAsync.
  static Result<DeviceMemoryPool> create(int device);

  cudaMemPool_t get() const noexcept { return pool_; }
  explicit operator bool() const noexcept { return pool_ != nullptr; }
  /// Destroys the pool (no-throw). Memory still allocated from it, or whose stream-ordered free
  /// has not completed, stays valid; the driver releases the pool's memory once all of it is freed.
  void reset() noexcept;

 private:
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
