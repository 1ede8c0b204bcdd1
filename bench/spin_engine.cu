#include "spin_engine.h"

#include <cuda_runtime.h>

#include "cuda/check.h"

namespace trtet_bench {
namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_scale_kernel(const float* __restrict__ x, float* __restrict__ out, std::int64_t n, float a,
                                  std::int64_t spin_ns) {
  extern __shared__ float occupancy[];  // sized by the launch to control how many blocks fit an SM
  const std::uint64_t start = global_ns();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * x[i];
  }
  if (spin_ns > 0) {
    while (global_ns() - start < static_cast<std::uint64_t>(spin_ns)) {
    }
  }
  if (threadIdx.x == 0 && n < 0) occupancy[0] = 0.0f;  // keeps the shared allocation referenced
}

}  // namespace

ex::Status launch_spin_scale(const float* x, float* out, std::int64_t n, const SpinOptions& options,
                             cudaStream_t stream) {
  for (int k = 0; k < options.kernels; ++k) {
    spin_scale_kernel<<<options.blocks, options.threads, static_cast<std::size_t>(options.shared_bytes), stream>>>(
        x, out, n, 2.0f, options.spin_ns);
  }
  TRTET_CUDA_CHECK(cudaGetLastError());
  return ex::Status::Ok();
}

SpinEngine::SpinEngine(int device, const SpinOptions& options) : device_(device), options_(options) {
  ex::engine::IoDesc x;
  x.name = "x";
  x.is_input = true;
  x.min_shape = ex::Shape{1};
  x.max_shape = ex::Shape{options.max_elements};
  ex::engine::IoDesc out;
  out.name = "out";
  out.min_shape = ex::Shape{1};
  out.max_shape = ex::Shape{options.max_elements};
  io_ = {x, out};
  shape_ = ex::Shape{1};
}

ex::Result<std::unique_ptr<SpinEngine>> SpinEngine::create(int device, const SpinOptions& options) {
  TRTET_CHECK_OR_RETURN(options.blocks > 0 && options.threads > 0 && options.kernels > 0, kInvalidArgument,
                        "spin engine needs blocks, threads and kernels > 0");
  if (options.shared_bytes > 48 * 1024) {
    TRTET_CUDA_CHECK(cudaFuncSetAttribute(spin_scale_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          options.shared_bytes));
  }
  return std::unique_ptr<SpinEngine>(new SpinEngine(device, options));
}

ex::Status SpinEngine::set_input_shape(int index, const ex::Shape& shape) {
  TRTET_CHECK_OR_RETURN(index == 0, kInvalidArgument, "binding %d is not an input", index);
  shape_ = shape;
  return ex::Status::Ok();
}

ex::Result<ex::Shape> SpinEngine::output_shape(int index) const {
  TRTET_CHECK_OR_RETURN(index == 1, kInvalidArgument, "binding %d is not an output", index);
  return shape_;
}

ex::Status SpinEngine::set_tensor_address(int index, void* address) {
  TRTET_CHECK_OR_RETURN(index == 0 || index == 1, kInvalidArgument, "no binding %d", index);
  if (index == 0) {
    x_ = static_cast<const float*>(address);
  } else {
    out_ = static_cast<float*>(address);
  }
  return ex::Status::Ok();
}

ex::Status SpinEngine::enqueue(cudaStream_t stream) {
  return launch_spin_scale(x_, out_, shape_.numel(), options_, stream);
}

}  // namespace trtet_bench
