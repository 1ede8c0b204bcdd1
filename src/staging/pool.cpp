#include "staging/pool.h"

#include <cstdio>
#include <vector>

#include "common/log.h"
#include "cuda/check.h"
#include "staging/arena.h"

namespace torch_tensorrt::executorch_backend::staging {

// Note [shared staging pools]: every session on a device allocates from one pool of each kind,
// made once for the process. A pool maps memory in units of its own choosing (32 MiB on the H200
// with driver 580), so a pool per session would reserve 32 MiB of device memory and 32 MiB of
// page-locked host memory for a session with 3 MiB of staging, 16 such sessions 16 times that, and
// each new session would pay for mapping (and page-locking) its first unit on its first call. With
// one pool, the driver packs sessions' staging into the same units: the process reserves what its
// sessions use rounded up to one unit, and a later load reuses the memory an earlier one freed,
// already mapped and page-locked. Three rules keep the stream-ordered, no-wait contract:
//  - The pool keeps what is freed (release threshold: all of it): a threshold would release memory
//    at whatever synchronization comes next, a call's own wait among them, and the next growth
//    would map (page-lock) it again. trim_staging_pool() gives unused memory back on request.
//  - No hidden dependencies: by default an allocation may reuse memory another stream freed by
//    making its own stream wait for that stream's free (cudaMemPoolReuseAllowInternalDependencies),
//    which would make one session's call wait on the GPU for another session's work, on another
//    green context. That reuse is off; a free is reused once it has completed (opportunistic
//    reuse) or once the allocating stream is ordered after it (event dependencies), else the pool
//    maps more.
//  - Never destroyed: the pools live as long as the process. On the H200 with driver 580.159.04,
//    pools made and destroyed one owner after another in one process make cuMemPoolDestroy fault
//    inside the driver (a null read, or a hang) after some dozen lifetimes, even when every free has
//    completed (docs/DESIGN.md, "Staging").
// What a session holds is counted by the session (its live allocations' sizes); what the process
// reserves is these pools' counters. The process's staging comes first from arenas that map memory
// in the driver's granularity (Note [staging arena] in arena.cpp); these pools serve only
// where a device or the driver has no virtual memory management for the kind.
namespace {

// A pool of `kind` on `device` set up for staging: freed memory kept, no hidden waits.
Result<cudaMemPool_t> make_staging_pool(PoolKind kind, int device) {
  using cuda::MemoryPool;
  TRTET_ASSIGN_OR_RETURN(MemoryPool made, kind == PoolKind::kDevice ? MemoryPool::device_memory(device)
                                                                   : MemoryPool::pinned_host_memory(device));
  int no_hidden_waits = 0;
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(made.get(), cudaMemPoolReuseAllowInternalDependencies, &no_hidden_waits));
  return made.release();  // never destroyed
}

const char* kind_name(PoolKind kind) { return kind == PoolKind::kDevice ? "device" : "pinned host"; }

struct StagingPools {
  std::mutex mutex;
  std::vector<StagingPool*> made;  // never destroyed, like the pools and arenas they hold
};

StagingPools& staging_pools() {
  static StagingPools* instance = new StagingPools();  // never destroyed
  return *instance;
}

StagingPool* find_staging_pool(StagingPools& pools, PoolKind kind, int device) {
  for (StagingPool* made : pools.made) {
    if (made->kind() == kind && made->device() == device) return made;
  }
  return nullptr;
}

StagingPool* find_staging_pool(PoolKind kind, int device) {
  StagingPools& pools = staging_pools();
  std::lock_guard<std::mutex> lock(pools.mutex);
  return find_staging_pool(pools, kind, device);
}

}  // namespace

StagingPool::StagingPool(PoolKind kind, int device) noexcept : kind_(kind), device_(device) {}

StagingPool::~StagingPool() = default;

Result<cudaMemPool_t> StagingPool::pool_locked() {
  if (pool_ == nullptr) {
    TRTET_ASSIGN_OR_RETURN(pool_, make_staging_pool(kind_, device_));
  }
  return pool_;
}

Result<cuda::DeviceBuffer> StagingPool::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cuda::DeviceBuffer::allocate_from(static_cast<cudaMemPool_t>(nullptr), 0, stream);
  if (uses_arena()) {
    Result<void*> data = arena_->allocate(bytes, stream);
    if (data.ok()) return cuda::DeviceBuffer::adopt(*arena_, *data, bytes, stream);
    // Out of memory (or of the range) is the answer a pool would give too; any other failure means
    // mapping this kind of memory does not work here after all (host-location memory the driver
    // refuses, the host not given access): the pool from now on.
    if (data.status().code() == ErrorCode::kMemoryAllocationFailed) return data.status();
    std::lock_guard<std::mutex> lock(mutex_);
    if (arena_ready_.exchange(false)) {
      why_pool_ = data.status().to_string();
      log(LogLevel::kWarning, "%s staging on device %d comes from a stream-ordered pool, which maps memory in "
          "larger units (32 MiB on the H200): %s", kind_name(kind_), device_, why_pool_.c_str());
    }
  }
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TRTET_ASSIGN_OR_RETURN(pool, pool_locked());
  }
  return cuda::DeviceBuffer::allocate_from(pool, bytes, stream);
}

Result<cuda::PoolUsage> StagingPool::usage() const {
  cuda::PoolUsage usage;
  if (arena_ != nullptr) usage = arena_->usage();
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool = pool_;
  }
  if (pool != nullptr) {
    TRTET_ASSIGN_OR_RETURN(const cuda::PoolUsage more, cuda::pool_usage(pool));
    usage.reserved += more.reserved;
    usage.used += more.used;
    usage.reserved_high += more.reserved_high;
    usage.used_high += more.used_high;
  }
  return usage;
}

Status StagingPool::trim() {
  if (arena_ != nullptr) TRTET_RETURN_IF_ERROR(arena_->trim());
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool = pool_;
  }
  if (pool != nullptr) TRTET_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
  return Status::Ok();
}

std::string StagingPool::describe() const {
  char line[512];
  if (uses_arena()) {
    const ArenaFacts f = arena_->facts();
    std::snprintf(line, sizeof line,
                  "%s staging: arena of %s memory (id %d), granularity %zu KiB, chunks of %zu KiB, range %zu MiB, "
                  "allocations rounded to %zu B%s%s",
                  kind_name(kind_), location_name(f.location_type), f.location_id, f.granularity >> 10,
                  f.chunk_bytes >> 10, f.range_bytes >> 20, f.alignment, f.host_access.empty() ? "" : "; host access: ",
                  f.host_access.c_str());
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    std::snprintf(line, sizeof line, "%s staging: stream-ordered pool (%s)", kind_name(kind_), why_pool_.c_str());
  }
  return line;
}

Result<StagingPool*> staging_pool(PoolKind kind, int device) {
  StagingPools& pools = staging_pools();
  std::lock_guard<std::mutex> lock(pools.mutex);
  if (StagingPool* found = find_staging_pool(pools, kind, device)) return found;
  std::unique_ptr<StagingPool> made(new StagingPool(kind, device));
  Result<std::unique_ptr<StagingArena>> arena = StagingArena::create(kind, device);
  if (arena.ok()) {
    made->arena_ = std::move(arena).value();
    made->arena_ready_.store(true, std::memory_order_release);
  } else {
    (void)cudaGetLastError();
    if (arena.status().code() == ErrorCode::kNoDevice) return arena.status();
    made->why_pool_ = arena.status().to_string();
    log(LogLevel::kWarning, "%s staging on device %d comes from a stream-ordered pool, which maps memory in larger "
        "units (32 MiB on the H200): %s", kind_name(kind), device, made->why_pool_.c_str());
    std::lock_guard<std::mutex> made_lock(made->mutex_);
    TRTET_RETURN_IF_ERROR(made->pool_locked().status());  // neither: the caller falls back further
  }
  pools.made.reserve(pools.made.size() + 1);  // may throw before the pool is given up: then it goes unused
  pools.made.push_back(made.release());
  return pools.made.back();
}

Result<cuda::DeviceBuffer> allocate_from(StagingPool* pool, std::size_t bytes, cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(pool != nullptr, kInvalidArgument, "a staging allocation from no staging pool");
  return pool->allocate(bytes, stream);
}

Result<cuda::PoolUsage> staging_pool_usage(PoolKind kind, int device) {
  StagingPool* pool = find_staging_pool(kind, device);
  if (pool == nullptr) return cuda::PoolUsage{};
  return pool->usage();
}

Status trim_staging_pool(PoolKind kind, int device) {
  StagingPool* pool = find_staging_pool(kind, device);
  if (pool == nullptr) return Status::Ok();
  return pool->trim();
}

}  // namespace torch_tensorrt::executorch_backend::staging
