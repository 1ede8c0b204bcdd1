#include "cuda/device_buffer.h"

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    bytes_ = other.bytes_;
    stream_ = other.stream_;
    allocator_ = other.allocator_;
    other.data_ = nullptr;
    other.bytes_ = 0;
    other.allocator_ = nullptr;
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

void DeviceBuffer::reset() noexcept {
  if (data_ != nullptr) {
    if (allocator_ != nullptr) {
      allocator_->free(data_, stream_);
    } else {
      TRTET_CUDA_WARN(cudaFreeAsync(data_, stream_));
    }
  }
  data_ = nullptr;
  bytes_ = 0;
  allocator_ = nullptr;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
