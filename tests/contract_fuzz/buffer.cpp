#include "contract_fuzz/buffer.h"

#include <cstdlib>
#include <cstring>

#include "cuda/check.h"

namespace trtet_test::fuzz {

ex::Result<std::unique_ptr<Buffer>> Buffer::allocate(Mem mem, std::size_t capacity) {
  capacity = (capacity == 0 ? 1 : capacity);
  void* data = nullptr;
  switch (mem) {
    case Mem::kDevice: TRTET_CUDA_CHECK(cudaMalloc(&data, capacity)); break;
    case Mem::kPinned: TRTET_CUDA_CHECK(cudaMallocHost(&data, capacity)); break;
    case Mem::kManaged: TRTET_CUDA_CHECK(cudaMallocManaged(&data, capacity)); break;
    case Mem::kPageable:
      data = std::aligned_alloc(256, (capacity + 255) / 256 * 256);
      if (data == nullptr) {
        return ex::make_error(ex::ErrorCode::kMemoryAllocationFailed, "aligned_alloc of %zu bytes failed", capacity);
      }
      break;
  }
  return std::unique_ptr<Buffer>(new Buffer(mem, data, capacity));
}

Buffer::~Buffer() {
  switch (mem_) {
    case Mem::kDevice:
    case Mem::kManaged: TRTET_CUDA_WARN(cudaFree(data_)); break;
    case Mem::kPinned: TRTET_CUDA_WARN(cudaFreeHost(data_)); break;
    case Mem::kPageable: std::free(data_); break;
  }
}

ex::Status Buffer::write(const void* source, std::size_t bytes, cudaStream_t io) {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(bytes <= capacity_, kInvalidArgument, "write of %zu bytes into a buffer of %zu", bytes,
                        capacity_);
  if (mem_ == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemcpyAsync(data_, source, bytes, cudaMemcpyHostToDevice, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memcpy(data_, source, bytes);
  }
  return ex::Status::Ok();
}

ex::Status Buffer::read(void* destination, std::size_t offset, std::size_t bytes, cudaStream_t io) const {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(offset + bytes <= capacity_, kInvalidArgument, "read of [%zu, %zu) from a buffer of %zu",
                        offset, offset + bytes, capacity_);
  const auto* from = static_cast<const unsigned char*>(data_) + offset;
  if (mem_ == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemcpyAsync(destination, from, bytes, cudaMemcpyDeviceToHost, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memcpy(destination, from, bytes);
  }
  return ex::Status::Ok();
}

ex::Status Buffer::fill(unsigned char value, std::size_t bytes, cudaStream_t io) {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(bytes <= capacity_, kInvalidArgument, "fill of %zu bytes of a buffer of %zu", bytes,
                        capacity_);
  if (mem_ == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemsetAsync(data_, value, bytes, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memset(data_, value, bytes);
  }
  return ex::Status::Ok();
}

}  // namespace trtet_test::fuzz
