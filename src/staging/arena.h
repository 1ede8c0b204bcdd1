// The process's staging memory of one kind on one device, mapped by the delegate in the driver's
// own granularity (Note [staging arena] in arena.cpp): one virtual address range reserved
// once, backed by physical chunks as use grows, sub-allocated in exact sizes and freed in stream
// order without waiting on the GPU for another stream.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "staging/arena_book.h"
#include "staging/pool.h"

namespace torch_tensorrt::executorch_backend::staging {

/// What an arena is made of (printed by trtet-cold-start --reserve).
struct ArenaFacts {
  std::size_t granularity = 0;  ///< cuMemGetAllocationGranularity's minimum for its memory
  std::size_t chunk_bytes = 0;  ///< what it maps at a time
  std::size_t range_bytes = 0;  ///< the address range it reserved
  std::size_t alignment = 0;    ///< what its allocations are rounded up to
  int location_type = 0;        ///< CU_MEM_LOCATION_TYPE_* of its physical memory
  int location_id = 0;
  std::string host_access;      ///< pinned host: how the host reads and writes it (after the first mapping)
};

/// The name of a CU_MEM_LOCATION_TYPE_* value.
const char* location_name(int location_type) noexcept;

class StagingArena final : public cuda::StreamOrderedAllocator {
 public:
  /// An arena of `kind` on `device` (nothing mapped yet). kNotSupported, with the reason, where
  /// the driver or the device has no virtual memory management for that kind of memory; kNoDevice
  /// where there is no driver.
  static Result<std::unique_ptr<StagingArena>> create(PoolKind kind, int device);
  /// Unmaps everything and frees the range; nothing may still use its memory (the process's
  /// arenas are never destroyed).
  ~StagingArena();
  StagingArena(const StagingArena&) = delete;
  StagingArena& operator=(const StagingArena&) = delete;

  /// `bytes` (> 0) usable in order on `stream`: memory whose free completed, or (device memory)
  /// memory freed on `stream` itself; else new chunks are mapped. Never waits on the GPU.
  /// kNotSupported where the host cannot be given access; kMemoryAllocationFailed where the
  /// device, the host or the range is full; the driver's error where mapping fails otherwise.
  Result<void*> allocate(std::size_t bytes, cudaStream_t stream);
  /// Frees `data` (from allocate) in order on `stream`: reused once an event recorded there has
  /// completed, or by a later allocation on the same stream. No-throw; failures are logged.
  void free(void* data, cudaStream_t stream) noexcept override;

  /// Mapped (reserved) against allocated (used), as a pool's counters are.
  cuda::PoolUsage usage() const;
  /// Unmaps every chunk no allocation uses and no pending free covers.
  Status trim();
  ArenaFacts facts() const;
  PoolKind kind() const noexcept { return kind_; }
  int device() const noexcept { return device_; }

 private:
  StagingArena(PoolKind kind, int device, const CUmemAllocationProp& prop, ArenaFacts facts, CUdeviceptr base);
  /// Maps `run`'s chunks and grants access (mutex held); on failure nothing stays mapped.
  Status map_locked(ArenaBook::Run run);
  /// Grants the device (and the host, for pinned host memory) access to [ptr, ptr + bytes).
  Status set_access_locked(CUdeviceptr ptr, std::size_t bytes);
  /// Moves completed frees to the free memory and recycles their events (mutex held).
  void settle_locked();

  PoolKind kind_;
  int device_;
  CUmemAllocationProp prop_;
  ArenaFacts facts_;
  CUdeviceptr base_ = 0;
  mutable std::mutex mutex_;
  ArenaBook book_;
  std::vector<cuda::Event> events_;         ///< a free's token is its event's index here
  std::vector<std::uint64_t> idle_events_;  ///< events no free waits on
  int access_variant_ = -1;                 ///< which set_access_locked variant works (-1: not tried yet)
};

}  // namespace torch_tensorrt::executorch_backend::staging
