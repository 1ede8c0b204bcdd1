#include "cuda/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::cuda {

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Result<PinnedBuffer> PinnedBuffer::allocate(std::size_t bytes) {
  PinnedBuffer buffer;
  if (bytes == 0) return buffer;
  TRTET_CUDA_CHECK(cudaHostAlloc(&buffer.data_, bytes, cudaHostAllocPortable));
  buffer.bytes_ = bytes;
  return buffer;
}

void PinnedBuffer::reset() noexcept {
  if (data_ != nullptr) TRTET_CUDA_WARN(cudaFreeHost(data_));
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
