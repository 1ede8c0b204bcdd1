#include "contract_fuzz/buffer.h"

#include <cstring>
#include <utility>

#include "cuda/check.h"

namespace trtet_test::fuzz {

ex::Result<std::unique_ptr<Buffer>> Buffer::allocate(Mem mem, std::size_t capacity) {
  auto block = MemoryBlock::allocate(mem, capacity);
  TRTET_RETURN_IF_ERROR(block.status());
  return std::unique_ptr<Buffer>(new Buffer(std::move(block).value()));
}

ex::Status Buffer::write(const void* source, std::size_t bytes, cudaStream_t io) {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(bytes <= capacity(), kInvalidArgument, "write of %zu bytes into a buffer of %zu", bytes,
                        capacity());
  if (mem() == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemcpyAsync(data(), source, bytes, cudaMemcpyHostToDevice, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memcpy(data(), source, bytes);
  }
  return ex::Status::Ok();
}

ex::Status Buffer::read(void* destination, std::size_t offset, std::size_t bytes, cudaStream_t io) const {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(offset + bytes <= capacity(), kInvalidArgument, "read of [%zu, %zu) from a buffer of %zu",
                        offset, offset + bytes, capacity());
  const auto* from = static_cast<const unsigned char*>(data()) + offset;
  if (mem() == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemcpyAsync(destination, from, bytes, cudaMemcpyDeviceToHost, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memcpy(destination, from, bytes);
  }
  return ex::Status::Ok();
}

ex::Status Buffer::fill(unsigned char value, std::size_t bytes, cudaStream_t io) {
  if (bytes == 0) return ex::Status::Ok();
  TRTET_CHECK_OR_RETURN(bytes <= capacity(), kInvalidArgument, "fill of %zu bytes of a buffer of %zu", bytes,
                        capacity());
  if (mem() == Mem::kDevice) {
    TRTET_CUDA_CHECK(cudaMemsetAsync(data(), value, bytes, io));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(io));
  } else {
    std::memset(data(), value, bytes);
  }
  return ex::Status::Ok();
}

}  // namespace trtet_test::fuzz
