#include "cuda/memory_pool.h"

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/staging_arena.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

namespace torch_tensorrt::executorch_backend::cuda {

Result<PoolUsage> pool_usage(cudaMemPool_t pool) {
  TRTET_CHECK_OR_RETURN(pool != nullptr, kInvalidArgument, "pool_usage of no pool");
  PoolUsage usage;
  // cuuint64_t counters, read into unsigned long long (the runtime's documented type for them).
  unsigned long long value = 0;
  TRTET_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &value));
  usage.reserved = value;
  TRTET_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value));
  usage.used = value;
  TRTET_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &value));
  usage.reserved_high = value;
  TRTET_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &value));
  usage.used_high = value;
  return usage;
}

Result<MemoryPool> MemoryPool::create(const cudaMemPoolProps& props) {
  MemoryPool pool;
  TRTET_CUDA_CHECK(cudaMemPoolCreate(&pool.pool_, &props));
  // Keep freed memory in the pool (see the class comment); the pool goes with its owner.
  unsigned long long keep = ~0ull;
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(pool.pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  return pool;
}

Result<MemoryPool> MemoryPool::device_memory(int device) {
  int supported = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  TRTET_CHECK_OR_RETURN(supported != 0, kNotSupported, "device %d has no memory pools (stream-ordered allocation)",
                        device);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  return create(props);
}

Result<MemoryPool> MemoryPool::pinned_host_memory(int device) {
  int supported = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrHostMemoryPoolsSupported, device));
  TRTET_CHECK_OR_RETURN(supported != 0, kNotSupported, "device %d has no host memory pools", device);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeHost;
  props.location.id = 0;
  TRTET_ASSIGN_OR_RETURN(MemoryPool pool, create(props));
  cudaMemAccessDesc access{};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = device;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  TRTET_CUDA_CHECK(cudaMemPoolSetAccess(pool.pool_, &access, 1));
  return pool;
}

void MemoryPool::reset() noexcept {
  if (pool_ != nullptr) TRTET_CUDA_WARN(cudaMemPoolDestroy(pool_));
  pool_ = nullptr;
}

// Note [pools are recycled]: a LeasedPool is a device or pinned host pool held by one owner at a
// time, so the pool's own counters are what that owner holds. No pool is ever destroyed: on the
// H200 with driver 580.159.04, pools made and destroyed one owner after another in one process
// make cuMemPoolDestroy fault inside the driver (a null read, or a hang) after some dozen
// lifetimes, even when every free has completed, and the same calls without cudaMemPoolDestroy
// run clean (delegate_memory_gpu_test run as one process; docs/DESIGN.md, "Staging"). A pool
// whose owner lets go goes back to a shelf, with its release threshold
// at 0 and trimmed, so the memory it kept goes back to the system at once and the memory a live
// graph still uses goes back at the first synchronization after the graph frees it. A pool is
// lent again only when nothing is allocated from it and it holds no memory, with its high-water
// marks reset: a new owner's counters start from zero, as with a new pool. The shelf lives as long
// as the process; its pools hold nothing at exit but what is still allocated.
namespace {

struct Shelved {
  PoolKind kind;
  int device;
  MemoryPool pool;
};

struct Shelf {
  std::mutex mutex;
  std::vector<Shelved> idle;
  std::atomic<std::size_t> made{0};
};

Shelf& shelf() {
  static Shelf* instance = new Shelf();  // never destroyed: owners may give pools back at exit
  return *instance;
}

// Readies an idle pool for a new owner: false where it still holds memory after a trim; else its
// high-water marks are reset and freed memory is kept again.
Result<bool> ready_for_lending(cudaMemPool_t pool) {
  TRTET_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
  TRTET_ASSIGN_OR_RETURN(const PoolUsage usage, pool_usage(pool));
  if (usage.used != 0 || usage.reserved != 0) return false;
  unsigned long long zero = 0;  // resets a high-water mark to the current value
  unsigned long long keep = ~0ull;
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return true;
}

}  // namespace

Result<LeasedPool> LeasedPool::take(PoolKind kind, int device) {
  LeasedPool leased;
  leased.kind_ = kind;
  leased.device_ = device;
  {
    Shelf& s = shelf();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto it = s.idle.begin(); it != s.idle.end(); ++it) {
      if (it->kind != kind || it->device != device) continue;
      const Result<bool> ready = ready_for_lending(it->pool.get());
      if (!ready.ok()) (void)cudaGetLastError();  // a pool that fails here stays on the shelf, unlent
      if (!ready.ok() || !*ready) continue;
      leased.pool_ = std::move(it->pool);
      s.idle.erase(it);
      return leased;
    }
  }
  TRTET_ASSIGN_OR_RETURN(leased.pool_, kind == PoolKind::kDevice ? MemoryPool::device_memory(device)
                                                                 : MemoryPool::pinned_host_memory(device));
  shelf().made.fetch_add(1, std::memory_order_relaxed);
  return leased;
}

std::size_t LeasedPool::pools_made() noexcept { return shelf().made.load(std::memory_order_relaxed); }

void LeasedPool::reset() noexcept {
  if (!pool_) return;
  // Nothing kept from here on: what the owner freed goes back now, what is still allocated goes
  // back once freed (at the next synchronization).
  unsigned long long keep_none = 0;
  TRTET_CUDA_WARN(cudaMemPoolSetAttribute(pool_.get(), cudaMemPoolAttrReleaseThreshold, &keep_none));
  TRTET_CUDA_WARN(cudaMemPoolTrimTo(pool_.get(), 0));
  Shelf& s = shelf();
  std::lock_guard<std::mutex> lock(s.mutex);
  try {
    s.idle.reserve(s.idle.size() + 1);
  } catch (...) {
    (void)pool_.release();  // no room on the shelf: the pool stays with the process, never destroyed
    return;
  }
  s.idle.push_back(Shelved{kind_, device_, std::move(pool_)});
}

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
//  - Never destroyed (Note [pools are recycled]): the pools live as long as the process.
// What a session holds is counted by the session (its live allocations' sizes); what the process
// reserves is these pools' counters. The process's staging comes first from arenas that map memory
// in the driver's granularity (Note [staging arena] in staging_arena.cpp); these pools serve only
// where a device or the driver has no virtual memory management for the kind.
namespace {

// A pool of `kind` on `device` set up for staging: freed memory kept, no hidden waits.
Result<cudaMemPool_t> make_staging_pool(PoolKind kind, int device) {
  TRTET_ASSIGN_OR_RETURN(MemoryPool made, kind == PoolKind::kDevice ? MemoryPool::device_memory(device)
                                                                   : MemoryPool::pinned_host_memory(device));
  int no_hidden_waits = 0;
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(made.get(), cudaMemPoolReuseAllowInternalDependencies, &no_hidden_waits));
  return made.release();  // never destroyed
}

const char* kind_name(PoolKind kind) { return kind == PoolKind::kDevice ? "device" : "pinned host"; }

std::atomic<bool> g_arenas{true};

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

Result<DeviceBuffer> StagingPool::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return DeviceBuffer::allocate_from(static_cast<cudaMemPool_t>(nullptr), 0, stream);
  if (uses_arena()) {
    Result<void*> data = arena_->allocate(bytes, stream);
    if (data.ok()) return DeviceBuffer(arena_.get(), *data, bytes, stream);
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
  return DeviceBuffer::allocate_from(pool, bytes, stream);
}

Result<PoolUsage> StagingPool::usage() const {
  PoolUsage usage;
  if (arena_ != nullptr) usage = arena_->usage();
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool = pool_;
  }
  if (pool != nullptr) {
    TRTET_ASSIGN_OR_RETURN(const PoolUsage more, pool_usage(pool));
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
  const bool arenas = g_arenas.load(std::memory_order_relaxed);
  Result<std::unique_ptr<StagingArena>> arena =
      arenas ? StagingArena::create(kind, device)
             : Result<std::unique_ptr<StagingArena>>(make_error(ErrorCode::kNotSupported, "arenas turned off"));
  if (!arenas) {
    made->why_pool_ = "arenas turned off (use_staging_arenas)";
    std::lock_guard<std::mutex> made_lock(made->mutex_);
    TRTET_RETURN_IF_ERROR(made->pool_locked().status());
  } else if (arena.ok()) {
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

void use_staging_arenas(bool enabled) noexcept { g_arenas.store(enabled, std::memory_order_relaxed); }

Result<PoolUsage> staging_pool_usage(PoolKind kind, int device) {
  StagingPool* pool = find_staging_pool(kind, device);
  if (pool == nullptr) return PoolUsage{};
  return pool->usage();
}

Status trim_staging_pool(PoolKind kind, int device) {
  StagingPool* pool = find_staging_pool(kind, device);
  if (pool == nullptr) return Status::Ok();
  return pool->trim();
}

}  // namespace torch_tensorrt::executorch_backend::cuda
