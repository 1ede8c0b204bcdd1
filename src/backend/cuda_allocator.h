// The project's CUDA DeviceAllocator for ExecuTorch's device-planned arenas and boundary copies
// (docs/DESIGN.md, "Device-planned programs"), and how it was registered in this process.
#pragma once

#include <executorch/runtime/core/device_allocator.h>

namespace torch_tensorrt::executorch_backend {

/// What happened to ExecuTorch's CUDA device-allocator slot when this library was loaded.
enum class CudaAllocatorRegistration {
  kOurs,                      ///< this library's allocator serves CUDA arenas and copies
  kAnotherWasRegistered,      ///< a library loaded earlier had registered one: it serves them
  kDeferredToExecuTorchCuda,  ///< ExecuTorch's CUDA backend is in the process and registers its own
  kNotRegistered,             ///< the application turned it off (TRTET_CUDA_ALLOCATOR=off)
};

/// A short name, e.g. "ours".
const char* to_string(CudaAllocatorRegistration registration) noexcept;

/// The outcome of this library's registration (made once, at static initialization).
CudaAllocatorRegistration cuda_allocator_registration() noexcept;

/// The allocator this library registers (or would have): allocate/deallocate arenas on the tagged
/// device from its own memory pool; copy_host_to_device / copy_device_to_host on the thread's
/// selected stream (boundary/boundary_transfers.h, Note [boundary copies]). Errors are logged
/// through ExecuTorch's log with what went wrong.
::executorch::runtime::DeviceAllocator& cuda_allocator() noexcept;

namespace detail {
/// Registers cuda_allocator() unless another CUDA allocator is registered, ExecuTorch's CUDA
/// backend is loaded (it registers its own, and a second registration aborts), or the
/// environment variable TRTET_CUDA_ALLOCATOR is "off". Called once, from the library's
/// static initializer (TensorRTBackend.cpp).
CudaAllocatorRegistration register_cuda_allocator() noexcept;
}  // namespace detail

}  // namespace torch_tensorrt::executorch_backend
