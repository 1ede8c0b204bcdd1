// The process's staging memory of one kind on one device, shared by every session (internal to the
// staging layer): an arena where the driver maps memory for it (arena.h), else a stream-ordered pool
// (Note [shared staging pools] in pool.cpp). A device without host memory pools leaves pinned host
// staging to cudaHostAlloc (the store's fallback, store.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/memory_pool.h"

namespace torch_tensorrt::executorch_backend::staging {

class StagingArena;

/// The kinds of staging memory.
enum class PoolKind { kDevice, kPinnedHost };

/// The process's staging of one kind on one device, shared by every session: a staging arena that
/// maps memory in the driver's granularity (Note [staging arena] in arena.cpp), or, where the
/// device or the driver has no virtual memory management for that kind, a stream-ordered pool
/// (Note [shared staging pools] in pool.cpp), the reason logged once. Made on first use, never
/// destroyed, keeping what its allocations free, so a later load or growth reuses memory already
/// mapped and, for host memory, already page-locked. Its allocations never wait on the GPU for
/// another stream's frees: they reuse a free once it has completed or once their stream is ordered
/// after it (the same stream), else more memory is mapped.
class StagingPool {
 public:
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool();

  /// `bytes` in order on `stream` (an empty buffer for 0 bytes). Where the arena fails for any
  /// reason but memory (host-location memory refused, no host access), it is given up for the
  /// pool from then on, logged once; memory it gave out goes back to it.
  Result<cuda::DeviceBuffer> allocate(std::size_t bytes, cudaStream_t stream);
  /// Reserved (mapped) against used (allocated), of the arena and the pool together.
  Result<cuda::PoolUsage> usage() const;
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

/// The process's staging of `kind` on `device` (above): made on first use, never destroyed.
/// kNotSupported where neither an arena nor a pool of that kind can be made on the device.
Result<StagingPool*> staging_pool(PoolKind kind, int device);
/// `bytes` of `pool`'s staging in order on `stream`; kInvalidArgument for no pool.
Result<cuda::DeviceBuffer> allocate_from(StagingPool* pool, std::size_t bytes, cudaStream_t stream);
/// What that staging reserves and uses (StagingPool::usage); all zero where it was never made
/// (nothing asked for it yet).
Result<cuda::PoolUsage> staging_pool_usage(PoolKind kind, int device);
/// Gives the system back what that staging holds and no allocation uses (StagingPool::trim); nothing
/// allocated from it is touched. Ok where it was never made.
Status trim_staging_pool(PoolKind kind, int device);

}  // namespace torch_tensorrt::executorch_backend::staging
