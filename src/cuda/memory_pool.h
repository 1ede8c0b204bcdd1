// Move-only owner of a stream-ordered memory pool, of device memory or of pinned host memory, and
// what any pool holds (its own statistics). The process's staging (src/staging/) and the boundary's
// arenas (src/boundary/) make theirs here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

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

/// A cudaMemPool_t made for one owner, so that the pool's counters are exactly what that owner
/// holds. Allocations from it (DeviceBuffer::allocate_from) are allocated and freed in stream
/// order like cudaMallocAsync's: neither synchronizes the device or another green context (unlike
/// cudaHostAlloc/cudaFreeHost for host memory), and they never share backing memory with the
/// device's default pool. Freed memory stays reserved in the pool (release threshold: all of it)
/// until the pool is destroyed: giving it back at synchronizations and
/// mapping it again on the next growth (for host memory, page-locking it again) costs more than it
/// saves for staging, which only grows.
class MemoryPool {
 public:
  MemoryPool() noexcept = default;  ///< empty: owns nothing
  ~MemoryPool() { reset(); }
  MemoryPool(const MemoryPool&) = delete;             // one owner per pool
  MemoryPool& operator=(const MemoryPool&) = delete;
  MemoryPool(MemoryPool&& other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
  MemoryPool& operator=(MemoryPool&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = other.pool_;
      other.pool_ = nullptr;
    }
    return *this;
  }

  /// A pool of `device`'s memory. kNotSupported where the device has no memory pools
  /// (cudaDevAttrMemoryPoolsSupported), which also means no cudaMallocAsync.
  static Result<MemoryPool> device_memory(int device);
  /// A pool of pinned host memory that `device` reads and writes at full copy bandwidth.
  /// kNotSupported where the device has no host memory pools (cudaDevAttrHostMemoryPoolsSupported;
  /// CUDA 12.6+ drivers).
  static Result<MemoryPool> pinned_host_memory(int device);

  cudaMemPool_t get() const noexcept { return pool_; }
  explicit operator bool() const noexcept { return pool_ != nullptr; }
  /// Destroys the pool (no-throw). Memory still allocated from it, or whose stream-ordered free
  /// has not completed, stays valid; the driver releases the pool's memory once all of it is freed.
  void reset() noexcept;
  /// Gives up the pool without destroying it; the caller owns the handle returned.
  cudaMemPool_t release() noexcept { return std::exchange(pool_, nullptr); }

 private:
  /// Makes the pool of `props` and keeps freed memory in it.
  static Result<MemoryPool> create(const cudaMemPoolProps& props);

  cudaMemPool_t pool_ = nullptr;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
