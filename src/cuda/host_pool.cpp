#include "cuda/host_pool.h"

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::cuda {

Result<HostMemoryPool> HostMemoryPool::create(int device) {
  int supported = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrHostMemoryPoolsSupported, device));
  TRTET_CHECK_OR_RETURN(supported != 0, kNotSupported, "device %d has no host memory pools", device);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeHost;
  props.location.id = 0;
  HostMemoryPool pool;
  TRTET_CUDA_CHECK(cudaMemPoolCreate(&pool.pool_, &props));
  cudaMemAccessDesc access{};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = device;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  TRTET_CUDA_CHECK(cudaMemPoolSetAccess(pool.pool_, &access, 1));
  // Keep freed memory in the pool: giving it back (and pinning it again) on every grow costs more.
  unsigned long long keep = ~0ull;
  TRTET_CUDA_CHECK(cudaMemPoolSetAttribute(pool.pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  return pool;
}

void HostMemoryPool::reset() noexcept {
  if (pool_ != nullptr) TRTET_CUDA_WARN(cudaMemPoolDestroy(pool_));
  pool_ = nullptr;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
