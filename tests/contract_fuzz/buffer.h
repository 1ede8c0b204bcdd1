// Memory of one kind (device, pinned, pageable, managed) that the fuzzer hands to the delegate,
// with host access that never synchronizes anything but the caller's own I/O stream, so a check
// made "right after return" sees exactly what the delegate left there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <utility>

#include "common/memory.h"
#include "common/status.h"
#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

namespace ex = torch_tensorrt::executorch_backend;

class Buffer {
 public:
  /// `capacity` bytes (at least 1) of `mem`, 256-byte aligned. Allocation may synchronize the
  /// device (cudaMalloc*): the executor allocates between calls, never during one.
  static ex::Result<std::unique_ptr<Buffer>> allocate(Mem mem, std::size_t capacity);
  Buffer(const Buffer&) = delete;             // owns its memory
  Buffer& operator=(const Buffer&) = delete;

  Mem mem() const noexcept { return block_.memory(); }
  void* data() const noexcept { return block_.data(); }
  std::size_t capacity() const noexcept { return block_.bytes(); }

  // Host access through `io` (a non-blocking stream of the calling thread): device memory is
  // copied on `io` and `io` alone is synchronized; host and managed memory are read directly.
  ex::Status write(const void* source, std::size_t bytes, cudaStream_t io);
  ex::Status read(void* destination, std::size_t offset, std::size_t bytes, cudaStream_t io) const;
  /// Every byte of [0, bytes) set to `value`.
  ex::Status fill(unsigned char value, std::size_t bytes, cudaStream_t io);

 private:
  explicit Buffer(MemoryBlock block) noexcept : block_(std::move(block)) {}
  MemoryBlock block_;
};

}  // namespace trtet_test::fuzz
