#include "engines/kernels.h"

#include <algorithm>

#include "cuda/check.h"

namespace trtet_test {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 4096;

__device__ __forceinline__ unsigned sm_id() {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void mark_sm(int* flags) {
  if (flags != nullptr && threadIdx.x == 0) {
    const unsigned sm = sm_id();
    flags[sm < static_cast<unsigned>(kMaxSmId) ? sm : kMaxSmId] = 1;
  }
}

__device__ __forceinline__ void spin_for(long long ns) {
  if (ns <= 0) return;
  const unsigned long long start = global_ns();
  while (global_ns() - start < static_cast<unsigned long long>(ns)) {
  }
}

__device__ __forceinline__ void spin_in_first_block(long long ns) {
  if (blockIdx.x == 0 && threadIdx.x == 0) spin_for(ns);
}

__global__ void axpby_kernel(const float* x, const float* y, float* out, long long n, float a, float b,
                             long long spin_ns, int* flags) {
  mark_sm(flags);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[i] = a * x[i] + b * y[i];
  }
  spin_in_first_block(spin_ns);
}

__global__ void scale_kernel(const float* x, float* out, long long n, float a, long long spin_ns, int* flags) {
  mark_sm(flags);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[i] = a * x[i];
  }
  spin_in_first_block(spin_ns);
}

__global__ void add_kernel(const float* p, const float* q, float* out, long long n, long long spin_ns, int* flags) {
  mark_sm(flags);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[i] = p[i] + q[i];
  }
  spin_in_first_block(spin_ns);
}

__global__ void sum_kernel(const float* x, float* out, long long n, int* flags) {
  __shared__ float partial[kThreads];
  mark_sm(flags);
  float acc = 0.0f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = partial[0];
}

__global__ void mark_sms_kernel(int* flags, long long spin_ns) {
  mark_sm(flags);
  if (threadIdx.x == 0) spin_for(spin_ns);
}

__global__ void spin_kernel(long long spin_ns) { spin_for(spin_ns); }

__global__ void fault_if_kernel(const float* x, float value) {
  if (x[0] == value) *reinterpret_cast<volatile int*>(static_cast<std::uintptr_t>(64)) = 1;
}

unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, kMaxBlocks)));
}

}  // namespace

Status launch_axpby(const float* x, const float* y, float* out, std::int64_t n, float a, float b,
                    std::int64_t spin_ns, int* sm_flags, cudaStream_t stream) {
  if (n == 0 && spin_ns == 0) return Status::Ok();
  axpby_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, out, n, a, b, spin_ns, sm_flags);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_scale(const float* x, float* out, std::int64_t n, float a, std::int64_t spin_ns, int* sm_flags,
                    cudaStream_t stream) {
  if (n == 0 && spin_ns == 0) return Status::Ok();
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, out, n, a, spin_ns, sm_flags);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_add(const float* p, const float* q, float* out, std::int64_t n, std::int64_t spin_ns, int* sm_flags,
                  cudaStream_t stream) {
  if (n == 0 && spin_ns == 0) return Status::Ok();
  add_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, q, out, n, spin_ns, sm_flags);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_sum(const float* x, float* out, std::int64_t n, int* sm_flags, cudaStream_t stream) {
  sum_kernel<<<1, kThreads, 0, stream>>>(x, out, n, sm_flags);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_mark_sms(int* sm_flags, int blocks, std::int64_t spin_ns, cudaStream_t stream) {
  if (blocks <= 0) return Status::Ok();
  mark_sms_kernel<<<static_cast<unsigned>(blocks), 32, 0, stream>>>(sm_flags, spin_ns);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_fault_if(const float* x, float value, cudaStream_t stream) {
  fault_if_kernel<<<1, 1, 0, stream>>>(x, value);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status launch_spin(std::int64_t spin_ns, int blocks, cudaStream_t stream) {
  if (blocks <= 0) return Status::Ok();
  spin_kernel<<<static_cast<unsigned>(blocks), 128, 0, stream>>>(spin_ns);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace trtet_test
