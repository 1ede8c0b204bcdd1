#include "cuda/memory_pool.h"

#include "cuda/check.h"

#include <atomic>
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

// Note [pools are recycled]: every session owns a device pool and a pinned host pool, so that the
// pools' own counters are what the session holds. On the H200 with driver 580.159.04, destroying
// such pools one session after another in one process made cuMemPoolDestroy fault inside the
// driver (a null read, or a hang) after some dozen session lifetimes, in sessions whose frees had
// all completed; with the same calls and no cudaMemPoolDestroy, the process ran clean
// (delegate_memory_gpu_test run as one process; docs/DESIGN.md, "Staging"). So sessions never
// destroy a pool: a pool whose owner lets go goes back to a shelf, with its release threshold
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

}  // namespace torch_tensorrt::executorch_backend::cuda
