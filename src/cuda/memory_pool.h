// Move-only owner of a stream-ordered memory pool, of device memory or of pinned host memory, and
// what any pool holds (its own statistics).
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
/// until the pool is destroyed or given back (LeasedPool): giving it back at synchronizations and
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

/// The kinds of pool a LeasedPool holds.
enum class PoolKind { kDevice, kPinnedHost };

/// A memory pool lent to one owner at a time from the process's shelf of pools, and given back, not
/// destroyed, when the owner lets go (Note [pools are recycled] in memory_pool.cpp). A pool taken
/// holds nothing: no allocation, no reserved memory, its high-water marks reset, so its counters
/// are exactly what the new owner allocates. A pool given back keeps no freed memory (release
/// threshold 0, trimmed); memory still allocated from it (a live graph's staging) stays valid, and
/// the pool is lent again only once all of that is freed.
class LeasedPool {
 public:
  LeasedPool() noexcept = default;  ///< empty: holds nothing
  ~LeasedPool() { reset(); }
  LeasedPool(const LeasedPool&) = delete;  // one owner at a time
  LeasedPool& operator=(const LeasedPool&) = delete;
  LeasedPool(LeasedPool&&) noexcept = default;  // MemoryPool's move leaves the source empty
  LeasedPool& operator=(LeasedPool&& other) noexcept {  // gives back what this one holds first
    if (this != &other) {
      reset();
      pool_ = std::move(other.pool_);
      kind_ = other.kind_;
      device_ = other.device_;
    }
    return *this;
  }

  /// An idle pool of `kind` on `device` from the shelf, else a new one (MemoryPool::device_memory,
  /// MemoryPool::pinned_host_memory: kNotSupported where the device has no such pools). Keeps
  /// freed memory while lent (release threshold: all of it).
  static Result<LeasedPool> take(PoolKind kind, int device);
  /// Pools made by take() in this process: at most the most owners there ever were at once, plus
  /// pools kept from being lent again by memory still allocated from them.
  static std::size_t pools_made() noexcept;

  cudaMemPool_t get() const noexcept { return pool_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(pool_); }
  /// Gives the pool back to the shelf (no-throw), releasing the memory it keeps unused.
  void reset() noexcept;

 private:
  MemoryPool pool_;
  PoolKind kind_ = PoolKind::kDevice;
  int device_ = 0;
};

/// The process's staging pool of `kind` on `device`, shared by every session (Note [shared staging
/// pools] in memory_pool.cpp): made on first use, never destroyed, keeping what its allocations free
/// (release threshold: all of it) so a later load or growth reuses memory already mapped and, for
/// host memory, already page-locked. Its allocations never wait on the GPU for another stream's
/// frees (cudaMemPoolReuseAllowInternalDependencies off): they reuse a free once it has completed
/// or once their stream is ordered after it, else the pool maps more. kNotSupported where the
/// device has no such pools (see MemoryPool).
Result<cudaMemPool_t> staging_pool(PoolKind kind, int device);
/// The counters of that pool; all zero where it was never made (nothing asked for it yet).
Result<PoolUsage> staging_pool_usage(PoolKind kind, int device);
/// Gives the system back what the pool holds and no allocation uses (cudaMemPoolTrimTo 0); nothing
/// allocated from it is touched. Ok where the pool was never made.
Status trim_staging_pool(PoolKind kind, int device);

}  // namespace torch_tensorrt::executorch_backend::cuda
