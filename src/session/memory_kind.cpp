#include "session/memory_kind.h"

#include <cuda_runtime_api.h>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::delegate {

const char* to_string(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kManaged: return "managed";
    case MemoryKind::kPinnedHost: return "pinned host";
    case MemoryKind::kPageableHost: return "pageable host";
  }
  return "unknown";
}

Result<PointerFacts> pointer_facts(const void* pointer, int engine_device) {
  cudaPointerAttributes attributes{};
  TRTET_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      TRTET_CHECK_OR_RETURN(attributes.device == engine_device, kInvalidArgument,
                            "tensor memory %p is on device %d, but the engine runs on device %d", pointer,
                            attributes.device, engine_device);
      return PointerFacts{MemoryKind::kDevice, false};
    case cudaMemoryTypeManaged: return PointerFacts{MemoryKind::kManaged, false};
    case cudaMemoryTypeHost: return PointerFacts{MemoryKind::kPinnedHost, attributes.devicePointer == pointer};
    case cudaMemoryTypeUnregistered: return PointerFacts{MemoryKind::kPageableHost, false};
  }
  return make_error(ErrorCode::kInternal, "cudaPointerGetAttributes returned unknown memory type %d for %p",
                    static_cast<int>(attributes.type), pointer);
}

Result<MemoryKind> classify_pointer(const void* pointer, int engine_device) {
  TRTET_ASSIGN_OR_RETURN(const PointerFacts facts, pointer_facts(pointer, engine_device));
  return facts.kind;
}

Result<PointerFacts> PointerKindCache::classify(const void* pointer, int engine_device) {
  for (std::size_t i = 0; i < size_; ++i) {
    if (entries_[i].pointer == pointer) return entries_[i].facts;
  }
  TRTET_ASSIGN_OR_RETURN(const PointerFacts facts, pointer_facts(pointer, engine_device));
  entries_[next_] = Entry{pointer, facts};
  next_ = (next_ + 1) % kCapacity;
  if (size_ < kCapacity) ++size_;
  return facts;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
