// The fake TensorRT's CUDA work (fake_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace trtet_fake {

/// out[i] = in[i] + 1 for `count` floats on `stream`.
cudaError_t launch_add_one(const float* in, float* out, std::int64_t count, cudaStream_t stream);

/// A tiny kernel on `stream` (the work placed on an auxiliary stream).
cudaError_t launch_touch(cudaStream_t stream);

}  // namespace trtet_fake
