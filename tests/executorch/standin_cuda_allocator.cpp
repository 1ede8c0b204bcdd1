// A stand-in for ExecuTorch's CUDA backend (backends/cuda), as far as the CUDA device allocator
// goes: the same class, executorch::backends::cuda::CudaAllocator with `static CudaAllocator&
// instance()` (the symbol _ZN10executorch8backends4cuda13CudaAllocator8instanceEv, which is how
// the project's library recognises ExecuTorch's CUDA backend in the process), registered
// unconditionally from a static initializer as that backend does, so a second CUDA registration
// (one the project's library should never make here) aborts the process inside ExecuTorch.
//
// Its allocator is the naive one: cudaMalloc on the tagged device, synchronous cudaMemcpy on the
// legacy stream (right without a guard; ExecuTorch's real one copies on the caller's selected
// stream). It counts what it served, and records what its initializer saw, so a test states which
// static-initializer order it covered (standin_cuda_allocator.h).
#include "executorch/standin_cuda_allocator.h"

#include <cuda_runtime_api.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/device_allocator.h>

#include <atomic>

namespace executorch::backends::cuda {

using ::executorch::runtime::Error;
using ::executorch::runtime::Result;
using ::executorch::runtime::etensor::DeviceIndex;
using ::executorch::runtime::etensor::DeviceType;

class CudaAllocator final : public ::executorch::runtime::DeviceAllocator {
 public:
  static CudaAllocator& instance();

  Result<void*> allocate(size_t nbytes, DeviceIndex index, size_t alignment) override {
    (void)alignment;  // cudaMalloc's 256 bytes satisfy every alignment ExecuTorch asks for
    ++trtet_standin::counters().allocations;
    void* ptr = nullptr;
    if (!on_device(index, [&] { return cudaMalloc(&ptr, nbytes); })) return Error::MemoryAllocationFailed;
    return ptr;
  }

  void deallocate(void* ptr, DeviceIndex index) override {
    ++trtet_standin::counters().deallocations;
    (void)on_device(index, [&] { return cudaFree(ptr); });
  }

  Error copy_host_to_device(void* dst, const void* src, size_t nbytes, DeviceIndex index) override {
    ++trtet_standin::counters().host_to_device;
    return on_device(index, [&] { return cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice); }) ? Error::Ok
                                                                                                   : Error::Internal;
  }

  Error copy_device_to_host(void* dst, const void* src, size_t nbytes, DeviceIndex index) override {
    ++trtet_standin::counters().device_to_host;
    return on_device(index, [&] { return cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost); }) ? Error::Ok
                                                                                                   : Error::Internal;
  }

  DeviceType device_type() const override { return DeviceType::CUDA; }

 private:
  CudaAllocator() = default;

  // Runs `call` with `index` current (-1: the current device), then restores the caller's device.
  template <typename Call>
  static bool on_device(DeviceIndex index, Call call) {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return false;
    if (index >= 0 && index != previous && cudaSetDevice(index) != cudaSuccess) return false;
    const bool ok = call() == cudaSuccess;
    if (index >= 0 && index != previous) (void)cudaSetDevice(previous);
    return ok;
  }
};

CudaAllocator& CudaAllocator::instance() {
  static CudaAllocator allocator;
  return allocator;
}

}  // namespace executorch::backends::cuda

namespace trtet_standin {
namespace {

InitRecord g_record;

// As ExecuTorch's CUDA backend does: register at static initialization, unconditionally.
struct RegisterAtLoad {
  RegisterAtLoad() {
    namespace etr = ::executorch::runtime;
    // The project's library registers TensorRTBackend from the same initializer that decides about
    // its CUDA allocator, so a registered TensorRTBackend means that initializer ran before this one.
    g_record.tensorrt_initializer_ran_first = etr::get_backend_class("TensorRTBackend") != nullptr;
    g_record.cuda_slot_was_empty = etr::get_device_allocator(etr::etensor::DeviceType::CUDA) == nullptr;
    etr::register_device_allocator(&::executorch::backends::cuda::CudaAllocator::instance());
    g_record.registered = true;
  }
};
RegisterAtLoad g_register_at_load;

}  // namespace

const InitRecord& init_record() { return g_record; }

Counters& counters() {
  static Counters c;
  return c;
}

::executorch::runtime::DeviceAllocator& standin_allocator() {
  return ::executorch::backends::cuda::CudaAllocator::instance();
}

}  // namespace trtet_standin
