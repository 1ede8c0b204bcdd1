#include "cuda/device_buffer.h"

#include "cuda/check.h"
#include "cuda/memory_pool.h"
#include "cuda/staging_arena.h"

namespace torch_tensorrt::executorch_backend::cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    bytes_ = other.bytes_;
    stream_ = other.stream_;
    arena_ = other.arena_;
    other.data_ = nullptr;
    other.bytes_ = 0;
    other.arena_ = nullptr;
  }
  return *this;
}

Result<DeviceBuffer> DeviceBuffer::allocate(std::size_t bytes, cudaStream_t stream) {
  DeviceBuffer buffer;
  buffer.stream_ = stream;
  if (bytes == 0) return buffer;
  TRTET_CUDA_CHECK(cudaMallocAsync(&buffer.data_, bytes, stream));
  buffer.bytes_ = bytes;
  return buffer;
}

Result<DeviceBuffer> DeviceBuffer::allocate_from(cudaMemPool_t pool, std::size_t bytes, cudaStream_t stream) {
  DeviceBuffer buffer;
  buffer.stream_ = stream;
  if (bytes == 0) return buffer;
  TRTET_CUDA_CHECK(cudaMallocFromPoolAsync(&buffer.data_, bytes, pool, stream));
  buffer.bytes_ = bytes;
  return buffer;
}

Result<DeviceBuffer> DeviceBuffer::allocate_from(StagingPool* pool, std::size_t bytes, cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(pool != nullptr, kInvalidArgument, "a staging allocation from no staging pool");
  return pool->allocate(bytes, stream);
}

void DeviceBuffer::reset() noexcept {
  if (data_ != nullptr) {
    if (arena_ != nullptr) {
      arena_->free(data_, stream_);
    } else {
      TRTET_CUDA_WARN(cudaFreeAsync(data_, stream_));
    }
  }
  data_ = nullptr;
  bytes_ = 0;
  arena_ = nullptr;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
