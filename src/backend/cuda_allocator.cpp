#include "backend/cuda_allocator.h"

#include <dlfcn.h>

#include <executorch/runtime/platform/log.h>

#include <cstdlib>
#include <cstring>

#include "common/environment.h"
#include "cuda/check.h"
#include "boundary/boundary_transfers.h"
#include "backend/error_map.h"

namespace torch_tensorrt::executorch_backend {
namespace {

namespace et = ::executorch::runtime;
using et::etensor::DeviceIndex;
using et::etensor::DeviceType;
using boundary::BoundaryTransfers;

/// `executorch::backends::cuda::CudaAllocator::instance()`: defined by ExecuTorch's CUDA backend,
/// which registers that allocator from its own static initializer. Every library a program was
/// linked with is mapped before any initializer runs, so the symbol is visible here even when that
/// backend's initializer comes after this one.
constexpr const char* kExecuTorchCudaAllocatorSymbol = "_ZN10executorch8backends4cuda13CudaAllocator8instanceEv";

/// The transfers of the arena's device. ExecuTorch passes -1 for "the current device" in ATen mode.
Result<BoundaryTransfers*> transfers_of(DeviceIndex index) {
  int device = index;
  if (index < 0) {
    TRTET_CHECK_OR_RETURN(index == -1, kInvalidArgument, "device index %d is not a device", static_cast<int>(index));
    TRTET_CUDA_CHECK(cudaGetDevice(&device));
  }
  return BoundaryTransfers::of_device(device);
}

class CudaAllocator final : public et::DeviceAllocator {
 public:
  et::Result<void*> allocate(std::size_t nbytes, DeviceIndex index, std::size_t alignment) override {
    Result<void*> arena = without_exceptions("allocate", [&]() -> Result<void*> {
      TRTET_ASSIGN_OR_RETURN(BoundaryTransfers * transfers, transfers_of(index));
      return transfers->allocate(nbytes, alignment);
    });
    if (!arena.ok()) {
      const Status failed = make_error(arena.status().code(), "arena of %zu bytes on cuda:%d: %s", nbytes,
                                       static_cast<int>(index), arena.status().message().c_str());
      return report(failed, DelegatePhase::kExecute, "CUDA allocator");
    }
    return arena.value();
  }

  void deallocate(void* ptr, DeviceIndex index) override {
    Result<BoundaryTransfers*> transfers = transfers_of(index);
    if (!transfers.ok()) {
      (void)report(transfers.status(), DelegatePhase::kExecute, "CUDA allocator (deallocate)");
      return;
    }
    transfers.value()->deallocate(ptr);
  }

  et::Error copy_host_to_device(void* dst, const void* src, std::size_t nbytes, DeviceIndex index) override {
    const Status copied = without_exceptions("copy_host_to_device", [&]() -> Status {
      TRTET_ASSIGN_OR_RETURN(BoundaryTransfers * transfers, transfers_of(index));
      return transfers->copy_to_device(dst, src, nbytes);
    });
    return report(copied, DelegatePhase::kExecute, "CUDA allocator (host to device copy)");
  }

  et::Error copy_device_to_host(void* dst, const void* src, std::size_t nbytes, DeviceIndex index) override {
    const Status copied = without_exceptions("copy_device_to_host", [&]() -> Status {
      TRTET_ASSIGN_OR_RETURN(BoundaryTransfers * transfers, transfers_of(index));
      return transfers->copy_to_host(dst, src, nbytes);
    });
    return report(copied, DelegatePhase::kExecute, "CUDA allocator (device to host copy)");
  }

  DeviceType device_type() const override { return DeviceType::CUDA; }
};

CudaAllocatorRegistration g_registration = CudaAllocatorRegistration::kNotRegistered;

}  // namespace

const char* to_string(CudaAllocatorRegistration registration) noexcept {
  switch (registration) {
    case CudaAllocatorRegistration::kOurs: return "ours";
    case CudaAllocatorRegistration::kAnotherWasRegistered: return "another library's, registered first";
    case CudaAllocatorRegistration::kDeferredToExecuTorchCuda: return "ExecuTorch's CUDA backend's";
    case CudaAllocatorRegistration::kNotRegistered: return "none (TRTET_CUDA_ALLOCATOR=off)";
  }
  return "unknown";
}

CudaAllocatorRegistration cuda_allocator_registration() noexcept { return g_registration; }

et::DeviceAllocator& cuda_allocator() noexcept {
  static CudaAllocator allocator;  // static lifetime, as the registry requires
  return allocator;
}

CudaAllocatorRegistration detail::register_cuda_allocator() noexcept {
  const char* setting = read_environment(kCudaAllocatorVariable);
  if (setting != nullptr && std::strcmp(setting, "off") == 0) {
    ET_LOG(Info, "TensorRTBackend: CUDA device allocator not registered (TRTET_CUDA_ALLOCATOR=off)");
    g_registration = CudaAllocatorRegistration::kNotRegistered;
  } else if (et::get_device_allocator(DeviceType::CUDA) != nullptr) {
    ET_LOG(Info, "TensorRTBackend: a CUDA device allocator was registered before this library's; it serves "
                 "device-planned arenas and their copies");
    g_registration = CudaAllocatorRegistration::kAnotherWasRegistered;
  } else if (dlsym(RTLD_DEFAULT, kExecuTorchCudaAllocatorSymbol) != nullptr) {
    ET_LOG(Info, "TensorRTBackend: ExecuTorch's CUDA backend is loaded and registers its CUDA device allocator; "
                 "this library does not register its own");
    g_registration = CudaAllocatorRegistration::kDeferredToExecuTorchCuda;
  } else {
    et::register_device_allocator(&cuda_allocator());
    g_registration = CudaAllocatorRegistration::kOurs;
  }
  return g_registration;
}

}  // namespace torch_tensorrt::executorch_backend
