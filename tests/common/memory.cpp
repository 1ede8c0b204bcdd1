#include "common/memory.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <utility>

#include "cuda/check.h"

namespace trtet_test {

const char* to_string(Memory memory) noexcept {
  switch (memory) {
    case Memory::kDevice: return "device";
    case Memory::kPinned: return "pinned";
    case Memory::kPageable: return "pageable";
    case Memory::kManaged: return "managed";
  }
  return "?";
}

ex::Result<MemoryBlock> MemoryBlock::allocate(Memory memory, std::size_t bytes) {
  bytes = bytes == 0 ? 1 : bytes;
  MemoryBlock block;
  block.memory_ = memory;
  switch (memory) {
    case Memory::kDevice: TRTET_CUDA_CHECK(cudaMalloc(&block.data_, bytes)); break;
    case Memory::kPinned: TRTET_CUDA_CHECK(cudaMallocHost(&block.data_, bytes)); break;
    case Memory::kManaged: TRTET_CUDA_CHECK(cudaMallocManaged(&block.data_, bytes)); break;
    case Memory::kPageable:
      block.data_ = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
      if (block.data_ == nullptr) {
        return ex::make_error(ex::ErrorCode::kMemoryAllocationFailed, "aligned_alloc of %zu bytes failed", bytes);
      }
      break;
  }
  block.bytes_ = bytes;
  return ex::Result<MemoryBlock>(std::move(block));
}

MemoryBlock& MemoryBlock::operator=(MemoryBlock&& other) noexcept {
  // A swap: what this held is freed with `other`.
  std::swap(memory_, other.memory_);
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

void MemoryBlock::reset() noexcept {
  if (data_ == nullptr) return;
  switch (memory_) {
    case Memory::kDevice:
    case Memory::kManaged: TRTET_CUDA_WARN(cudaFree(data_)); break;
    case Memory::kPinned: TRTET_CUDA_WARN(cudaFreeHost(data_)); break;
    case Memory::kPageable: std::free(data_); break;
  }
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace trtet_test
