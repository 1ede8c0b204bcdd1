// Move-only owner of a stream-ordered memory pool, of device memory or of pinned host memory, and
// what any pool holds (its own statistics).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

class DeviceBuffer;
class StagingArena;

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

/// The process's staging of one kind on one device, shared by every session: a staging arena that
/// maps memory in the driver's granularity (Note [staging arena] in staging_arena.cpp), or, where
/// the device or the driver has no virtual memory management for that kind, a stream-ordered pool
/// (Note [shared staging pools] in memory_pool.cpp), the reason logged once. Made on first use,
/// never destroyed, keeping what its allocations free, so a later load or growth reuses memory
/// already mapped and, for host memory, already page-locked. Its allocations never wait on the GPU
/// for another stream's frees: they reuse a free once it has completed or once their stream is
/// ordered after it (the same stream), else more memory is mapped.
class StagingPool {
 public:
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool();

  /// `bytes` in order on `stream` (an empty buffer for 0 bytes). Where the arena fails for any
  /// reason but memory (host-location memory refused, no host access), it is given up for the
  /// pool from then on, logged once; memory it gave out goes back to it.
  Result<DeviceBuffer> allocate(std::size_t bytes, cudaStream_t stream);
  /// Reserved (mapped) against used (allocated), of the arena and the pool together.
  Result<PoolUsage> usage() const;
  /// Gives back what no allocation uses (the arena's unused chunks; cudaMemPoolTrimTo 0).
  Status trim();

  PoolKind kind() const noexcept { return kind_; }
  int device() const noexcept { return device_; }
  /// True while the arena serves the allocations.
  bool uses_arena() const noexcept { return arena_ready_.load(std::memory_order_acquire); }
  /// One line: where the staging comes from and what it is made of (the arena's granularity,
  /// chunk, location and host access; or the pool and why).
  std::string describe() const;

 private:
  friend Result<StagingPool*> staging_pool(PoolKind kind, int device);
  StagingPool(PoolKind kind, int device) noexcept;
  /// The pool, made on first use (mutex held).
  Result<cudaMemPool_t> pool_locked();

  PoolKind kind_;
  int device_;
  std::unique_ptr<StagingArena> arena_;  ///< kept once made, also when given up (its memory may be in use)
  std::atomic<bool> arena_ready_{false};
  mutable std::mutex mutex_;
  cudaMemPool_t pool_ = nullptr;         ///< the fallback; never destroyed
  std::string why_pool_;                 ///< why the arena does not serve (empty while it does)
};

/// For benchmarks that compare the two: whether staging made from now on (a device and kind not
/// asked for yet) may be an arena (true, the default) or is always a pool.
void use_staging_arenas(bool enabled) noexcept;

/// The process's staging of `kind` on `device` (above): made on first use, never destroyed.
/// kNotSupported where neither an arena nor a pool of that kind can be made on the device.
Result<StagingPool*> staging_pool(PoolKind kind, int device);
/// What that staging reserves and uses (StagingPool::usage); all zero where it was never made
/// (nothing asked for it yet).
Result<PoolUsage> staging_pool_usage(PoolKind kind, int device);
/// Gives the system back what that staging holds and no allocation uses (StagingPool::trim); nothing
/// allocated from it is touched. Ok where it was never made.
Status trim_staging_pool(PoolKind kind, int device);

}  // namespace torch_tensorrt::executorch_backend::cuda
