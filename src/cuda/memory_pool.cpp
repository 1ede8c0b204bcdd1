#include "cuda/memory_pool.h"

#include "cuda/check.h"

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

}  // namespace torch_tensorrt::executorch_backend::cuda
