#include "contract_fuzz/fuzz_kernels.h"

#include <algorithm>

#include "cuda/check.h"

namespace trtet_test::fuzz {
namespace {

__global__ void xor_bytes_kernel(const unsigned char* in, unsigned char* out, std::size_t bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += stride) {
    out[i] = static_cast<unsigned char>(in[i] ^ kXorByte);
  }
}

}  // namespace

torch_tensorrt::executorch_backend::Status launch_xor_bytes(const void* in, void* out, std::size_t bytes,
                                                            cudaStream_t stream) {
  if (bytes == 0) return torch_tensorrt::executorch_backend::Status::Ok();
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((bytes + kThreads - 1) / kThreads, 4096));
  xor_bytes_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const unsigned char*>(in),
                                                     static_cast<unsigned char*>(out), bytes);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return torch_tensorrt::executorch_backend::Status::Ok();
}

}  // namespace trtet_test::fuzz
