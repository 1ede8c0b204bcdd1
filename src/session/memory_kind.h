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

/// Where a pointer's memory lives, and for page-locked host memory whether the device reads and
/// writes it at the same address (cudaHostAlloc's under unified addressing; cudaHostRegister's where
/// the device uses host pointers for registered memory, unless registered read-only): then a small
/// copy of it may be a kernel (Note [small copies] in src/staging/small_copy.cu).
struct PointerFacts {
  MemoryKind kind = MemoryKind::kDevice;
  bool device_mapped = false;
};

/// Classifies `pointer` with cudaPointerGetAttributes. Device memory of another device than
/// `engine_device` is kInvalidArgument.
Result<PointerFacts> pointer_facts(const void* pointer, int engine_device);
/// The same, the kind alone.
Result<MemoryKind> classify_pointer(const void* pointer, int engine_device);

/// A small cache in front of classify_pointer (a ring of 32 entries, oldest replaced first):
/// ExecuTorch's memory-planned tensors pass the same pointers on every call. Keyed by address
/// alone, so an address freed and reused for memory of another kind would keep its cached kind.
/// Page-locked memory is therefore asked of the driver on every call (its entry refreshed): host
/// memory is unregistered and its address kept, or freed and its address handed to a device
/// allocation (a device tensor cached as pinned would be staged, one copy more on every call, as
/// an H100 counted in S64 after cudaFreeHost then cudaMalloc), and a copy kernel must not write
/// memory no longer mapped. Device and managed entries are kept: those are the memory-planned
/// tensors, and asking would cost every call. So are pageable ones: pageable memory registered
/// since is staged as pageable, which is right for it, only not the shortest way. The session asks
/// the driver, not the cache, while a stream is being captured.
class PointerKindCache {
 public:
  /// Where the facts come from: pointer_facts, the driver (a test passes its own).
  using Query = Result<PointerFacts> (*)(const void* pointer, int engine_device);
  explicit PointerKindCache(Query query = &pointer_facts) noexcept : query_(query) {}

  Result<PointerFacts> classify(const void* pointer, int engine_device);

 private:
  Query query_;
  struct Entry {
    const void* pointer;
    PointerFacts facts;
  };
  static constexpr std::size_t kCapacity = 32;
  std::array<Entry, kCapacity> entries_{};
  std::size_t size_ = 0;
  std::size_t next_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
