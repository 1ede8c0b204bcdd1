#include "engines/waves_engine.h"

#include <algorithm>
#include <cmath>

#include "cuda/check.h"
#include "cuda/device.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

constexpr int kWaveThreads = 256;

__device__ __forceinline__ unsigned long long waves_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Each block: its share of out = a*x + b*y, then thread 0 spins; the block holds its dynamic
// shared memory (sized to fill the SM) until it ends, so the next block waits for the SM.
__global__ void waves_kernel(const float* x, const float* y, float* out, long long n, float a, float b,
                             long long spin_ns, int* flags) {
  extern __shared__ unsigned char hold[];
  if (flags != nullptr && threadIdx.x == 0) {
    unsigned sm = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    flags[sm < static_cast<unsigned>(kMaxSmId) ? sm : kMaxSmId] = 1;
  }
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[i] = a * x[i] + b * y[i];
  }
  if (threadIdx.x == 0) {
    const unsigned long long start = waves_ns();
    while (waves_ns() - start < static_cast<unsigned long long>(spin_ns)) {
    }
    if (spin_ns < 0) hold[0] = 1;  // keeps the shared allocation
  }
}

}  // namespace

Result<std::pair<int, int>> waves_occupancy(int device) {
  ex::cuda::DeviceGuard guard(device);
  TRTET_RETURN_IF_ERROR(guard.status());
  int per_sm = 0, optin = 0, reserved = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  // More than half of the SM's shared memory (with the per-block reserve) per block: one fits.
  int bytes = per_sm / 2 - reserved + 4096;
  if (bytes > optin) bytes = 0;  // cannot pin: the occupancy calculator says how many fit
  if (bytes > 0) {
    TRTET_CUDA_CHECK(cudaFuncSetAttribute(waves_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
  int resident = 0;
  TRTET_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, waves_kernel, kWaveThreads,
                                                                 static_cast<std::size_t>(bytes)));
  TRTET_CHECK_OR_RETURN(resident >= 1, kInternal, "the waves kernel fits no block on an SM (%d bytes shared)", bytes);
  return Result<std::pair<int, int>>(std::make_pair(resident, bytes));
}

WavesEngine::WavesEngine(int device, const Shape& min_shape, const Shape& max_shape, int blocks,
                         const KernelOptions& options)
    : ElementwiseEngine(device, min_shape, max_shape, options), blocks_(blocks) {}

Result<std::unique_ptr<WavesEngine>> WavesEngine::create(int device, const Shape& min_shape, const Shape& max_shape,
                                                         int blocks, const KernelOptions& options) {
  TRTET_CHECK_OR_RETURN(blocks >= 1, kInvalidArgument, "a waves engine needs at least one block, got %d", blocks);
  std::unique_ptr<WavesEngine> engine(new WavesEngine(device, min_shape, max_shape, blocks, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  TRTET_RETURN_IF_ERROR(engine->init_kernel());
  return Result<std::unique_ptr<WavesEngine>>(std::move(engine));
}

Status WavesEngine::init_kernel() {
  TRTET_ASSIGN_OR_RETURN(const auto occupancy, waves_occupancy(device_));
  resident_per_sm_ = occupancy.first;
  shared_bytes_ = occupancy.second;
  return Status::Ok();
}

double WavesEngine::expected_us(unsigned sms) const noexcept {
  if (sms == 0) return 0;
  const double waves = std::ceil(static_cast<double>(blocks_) / (static_cast<double>(sms) * resident_per_sm_));
  return waves * static_cast<double>(options_.spin_us) * options_.kernels;
}

Status WavesEngine::launch(const float* x, const float* y, float* out, std::int64_t n, cudaStream_t stream) {
  waves_kernel<<<static_cast<unsigned>(blocks_), kWaveThreads, static_cast<std::size_t>(shared_bytes_), stream>>>(
      x, y, out, n, options_.a, options_.b, spin_ns(), sm_flags());
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace trtet_test
