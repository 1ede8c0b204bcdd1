#include "common/memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

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

void poison_floats(void* data, std::size_t count) {
  if (count == 0) return;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    (void)cudaGetLastError();
    attributes.type = cudaMemoryTypeUnregistered;
  }
  if (attributes.type != cudaMemoryTypeDevice) {
    std::fill_n(static_cast<float*>(data), count, kPoison);  // host or managed memory
    return;
  }
  const std::vector<float> poison(count, kPoison);
  // From pageable memory cudaMemcpy may return before its transfer lands, and the legacy stream does
  // not order the non-blocking streams tests run on: wait for it.
  if (cudaMemcpy(data, poison.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) {
    std::abort();
  }
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
