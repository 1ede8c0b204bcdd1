#include "session/memory_kind.h"

#include <cuda_runtime_api.h>

#include "cuda/check.h"
#include "cuda/driver.h"

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

namespace {

/// True when the device reads and writes pinned memory at `pointer` itself: mapped at the same
/// address, and not registered read-only for the device (its access flags, from the driver), since a
/// copy kernel writes a small output there (Note [small copies]). Anything unknown is false: the
/// copy engines take it.
bool device_writes_at(const void* pointer, const cudaPointerAttributes& attributes) noexcept {
  if (attributes.devicePointer != pointer) return false;
  const Result<const cuda::DriverApi*> api = cuda::driver();
  if (!api.ok()) return false;
  unsigned long long flags = 0;
  if ((*api)->cuPointerGetAttribute(&flags, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                                    reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) {
    return false;
  }
  return flags == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
}

}  // namespace

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
    case cudaMemoryTypeHost: return PointerFacts{MemoryKind::kPinnedHost, device_writes_at(pointer, attributes)};
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
    if (entries_[i].pointer != pointer) continue;
    if (entries_[i].facts.kind != MemoryKind::kPinnedHost) return entries_[i].facts;
    // Page-locked memory is asked again (see the class comment): what is there now.
    TRTET_ASSIGN_OR_RETURN(entries_[i].facts, query_(pointer, engine_device));
    return entries_[i].facts;
  }
  TRTET_ASSIGN_OR_RETURN(const PointerFacts facts, query_(pointer, engine_device));
  entries_[next_] = Entry{pointer, facts};
  next_ = (next_ + 1) % kCapacity;
  if (size_ < kCapacity) ++size_;
  return facts;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
