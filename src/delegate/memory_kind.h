// Where an argument's memory lives, decided per pointer and cached where pointers repeat.
#pragma once

#include <array>
#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::delegate {

enum class MemoryKind {
  kDevice,        ///< device memory of the engine's device: bound directly
  kManaged,       ///< managed (unified) memory: bound directly
  kPinnedHost,    ///< page-locked host memory: copied in stream order, capturable
  kPageableHost,  ///< ordinary host memory: staged through the session's pinned buffers
};

const char* to_string(MemoryKind kind) noexcept;

/// True for the kinds an engine can be bound to directly.
constexpr bool is_device_accessible(MemoryKind kind) noexcept {
  return kind == MemoryKind::kDevice || kind == MemoryKind::kManaged;
}

/// Classifies `pointer` with cudaPointerGetAttributes. Device memory of another device than
/// `engine_device` is kInvalidArgument.
Result<MemoryKind> classify_pointer(const void* pointer, int engine_device);

/// A small most-recently-used cache in front of classify_pointer: ExecuTorch's memory-planned
/// tensors pass the same pointers on every call. Keyed by address alone: an address freed and
/// reused for memory of another kind keeps its cached kind until clear().
class PointerKindCache {
 public:
  Result<MemoryKind> classify(const void* pointer, int engine_device);
  /// Forgets every entry (memory may have been freed and reused).
  void clear() noexcept { size_ = 0; }
  std::size_t size() const noexcept { return size_; }

 private:
  struct Entry {
    const void* pointer;
    MemoryKind kind;
  };
  static constexpr std::size_t kCapacity = 32;
  std::array<Entry, kCapacity> entries_{};
  std::size_t size_ = 0;
  std::size_t next_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
