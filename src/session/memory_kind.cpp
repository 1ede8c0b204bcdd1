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

Result<MemoryKind> classify_pointer(const void* pointer, int engine_device) {
  cudaPointerAttributes attributes{};
  TRTET_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      TRTET_CHECK_OR_RETURN(attributes.device == engine_device, kInvalidArgument,
                            "tensor memory %p is on device %d, but the engine runs on device %d", pointer,
                            attributes.device, engine_device);
      return MemoryKind::kDevice;
    case cudaMemoryTypeManaged: return MemoryKind::kManaged;
    case cudaMemoryTypeHost: return MemoryKind::kPinnedHost;
    case cudaMemoryTypeUnregistered: return MemoryKind::kPageableHost;
  }
  return make_error(ErrorCode::kInternal, "cudaPointerGetAttributes returned unknown memory type %d for %p",
                    static_cast<int>(attributes.type), pointer);
}

Result<MemoryKind> PointerKindCache::classify(const void* pointer, int engine_device) {
  for (std::size_t i = 0; i < size_; ++i) {
    if (entries_[i].pointer == pointer) return entries_[i].kind;
  }
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, classify_pointer(pointer, engine_device));
  entries_[next_] = Entry{pointer, kind};
  next_ = (next_ + 1) % kCapacity;
  if (size_ < kCapacity) ++size_;
  return kind;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
