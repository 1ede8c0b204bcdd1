// The kinds of memory tests hand the delegate, and the owner of one allocation of a kind.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace trtet_test {

namespace ex = torch_tensorrt::executorch_backend;

/// The value outputs are filled with before a call, so an untouched output is recognisable.
constexpr float kPoison = -12345.5f;

/// Fills `count` floats at `data` (host, managed or device memory) with kPoison, written when it
/// returns. Between calls (nothing in flight on that memory), never inside a timed section or a capture.
void poison_floats(void* data, std::size_t count);

/// In the order the contract fuzzer draws them (a seed's draws depend on it).
enum class Memory : std::uint8_t { kDevice, kPinned, kPageable, kManaged };
/// "device", "pinned", "pageable" or "managed".
const char* to_string(Memory memory) noexcept;
/// Pinned or pageable: memory the GPU cannot bind directly, staged by the delegate.
constexpr bool is_host(Memory memory) noexcept { return memory == Memory::kPinned || memory == Memory::kPageable; }

/// One allocation of a Memory kind, 256-byte aligned, freed the way it was made. Allocating and
/// freeing may synchronize the device (cudaMalloc*, cudaFree*): tests do it between calls, never
/// inside a timed section or a capture.
class MemoryBlock {
 public:
  MemoryBlock() noexcept = default;
  /// `bytes` (at least 1) of `memory`.
  static ex::Result<MemoryBlock> allocate(Memory memory, std::size_t bytes);
  ~MemoryBlock() { reset(); }
  MemoryBlock(MemoryBlock&& other) noexcept { *this = static_cast<MemoryBlock&&>(other); }
  /// Takes `other`'s memory; what this held is freed when `other` is.
  MemoryBlock& operator=(MemoryBlock&& other) noexcept;
  MemoryBlock(const MemoryBlock&) = delete;  // owns its memory
  MemoryBlock& operator=(const MemoryBlock&) = delete;

  Memory memory() const noexcept { return memory_; }
  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  /// Frees the memory now (nothing where there is none).
  void reset() noexcept;

 private:
  Memory memory_ = Memory::kPageable;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace trtet_test
