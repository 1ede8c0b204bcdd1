// libtrtet_faults.so, continued (shim.cpp): the driver functions the runtime fetches through
// cudaGetDriverEntryPointByVersion, each handed out wrapped, and thread starts.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "faults/shim_state.h"

using namespace trtet_faults_shim;  // NOLINT: the shim's own helpers

// ---- driver functions handed out through cudaGetDriverEntryPointByVersion ----

namespace {

std::atomic<void*> g_cuGreenCtxCreate{nullptr};
std::atomic<void*> g_cuGreenCtxStreamCreate{nullptr};
std::atomic<void*> g_cuDevResourceGenerateDesc{nullptr};
std::atomic<void*> g_cuMemCreate{nullptr};
std::atomic<void*> g_cuMemAddressReserve{nullptr};
std::atomic<void*> g_cuMemMap{nullptr};
std::atomic<void*> g_cuMemSetAccess{nullptr};

template <typename Fn>
Fn real_driver(const std::atomic<void*>& slot) {
  return reinterpret_cast<Fn>(slot.load(std::memory_order_acquire));
}

CUresult CUDAAPI wrap_cuGreenCtxCreate(CUgreenCtx* context, CUdevResourceDesc desc, CUdevice device, unsigned int flags) {
  if (point("cuGreenCtxCreate", TRTET_FAULT_DRIVER)) {
    TRTET_NULL_OUT(context);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return real_driver<decltype(&wrap_cuGreenCtxCreate)>(g_cuGreenCtxCreate)(context, desc, device, flags);
}

CUresult CUDAAPI wrap_cuGreenCtxStreamCreate(CUstream* stream, CUgreenCtx context, unsigned int flags, int priority) {
  if (point("cuGreenCtxStreamCreate", TRTET_FAULT_DRIVER)) {
    TRTET_NULL_OUT(stream);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return real_driver<decltype(&wrap_cuGreenCtxStreamCreate)>(g_cuGreenCtxStreamCreate)(stream, context, flags, priority);
}

CUresult CUDAAPI wrap_cuDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* resources, unsigned int count) {
  if (point("cuDevResourceGenerateDesc", TRTET_FAULT_DRIVER)) return CUDA_ERROR_OUT_OF_MEMORY;
  return real_driver<decltype(&wrap_cuDevResourceGenerateDesc)>(g_cuDevResourceGenerateDesc)(desc, resources, count);
}

CUresult CUDAAPI wrap_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                  unsigned long long flags) {
  if (point("cuMemCreate", TRTET_FAULT_DRIVER)) return CUDA_ERROR_OUT_OF_MEMORY;
  return real_driver<decltype(&wrap_cuMemCreate)>(g_cuMemCreate)(handle, size, prop, flags);
}

CUresult CUDAAPI wrap_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                          unsigned long long flags) {
  if (point("cuMemAddressReserve", TRTET_FAULT_DRIVER)) return CUDA_ERROR_OUT_OF_MEMORY;
  return real_driver<decltype(&wrap_cuMemAddressReserve)>(g_cuMemAddressReserve)(ptr, size, alignment, addr, flags);
}

CUresult CUDAAPI wrap_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                               unsigned long long flags) {
  if (point("cuMemMap", TRTET_FAULT_DRIVER)) return CUDA_ERROR_OUT_OF_MEMORY;
  return real_driver<decltype(&wrap_cuMemMap)>(g_cuMemMap)(ptr, size, offset, handle, flags);
}

CUresult CUDAAPI wrap_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (point("cuMemSetAccess", TRTET_FAULT_DRIVER)) return CUDA_ERROR_OUT_OF_MEMORY;
  return real_driver<decltype(&wrap_cuMemSetAccess)>(g_cuMemSetAccess)(ptr, size, desc, count);
}

struct DriverWrap {
  const char* symbol;
  std::atomic<void*>* real;
  void* wrapper;
};

const DriverWrap kDriverWraps[] = {
    {"cuGreenCtxCreate", &g_cuGreenCtxCreate, reinterpret_cast<void*>(&wrap_cuGreenCtxCreate)},
    {"cuGreenCtxStreamCreate", &g_cuGreenCtxStreamCreate, reinterpret_cast<void*>(&wrap_cuGreenCtxStreamCreate)},
    {"cuDevResourceGenerateDesc", &g_cuDevResourceGenerateDesc, reinterpret_cast<void*>(&wrap_cuDevResourceGenerateDesc)},
    {"cuMemCreate", &g_cuMemCreate, reinterpret_cast<void*>(&wrap_cuMemCreate)},
    {"cuMemAddressReserve", &g_cuMemAddressReserve, reinterpret_cast<void*>(&wrap_cuMemAddressReserve)},
    {"cuMemMap", &g_cuMemMap, reinterpret_cast<void*>(&wrap_cuMemMap)},
    {"cuMemSetAccess", &g_cuMemSetAccess, reinterpret_cast<void*>(&wrap_cuMemSetAccess)},
};

}  // namespace

extern "C" cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                                   unsigned long long flags,
                                                                   enum cudaDriverEntryPointQueryResult* status) {
  TRTET_REAL(cudaGetDriverEntryPointByVersion);
  count_call("cudaGetDriverEntryPointByVersion");
  const cudaError_t error = real(symbol, fn, version, flags, status);
  if (error != cudaSuccess || symbol == nullptr || fn == nullptr || *fn == nullptr) return error;
  for (const DriverWrap& wrap : kDriverWraps) {
    if (std::strcmp(symbol, wrap.symbol) != 0) continue;
    // One ABI per symbol here: the version the wrapper's signature is (the runtime's request).
    void* expected = nullptr;
    wrap.real->compare_exchange_strong(expected, *fn, std::memory_order_acq_rel);
    if (wrap.real->load(std::memory_order_acquire) == *fn) *fn = wrap.wrapper;
    break;
  }
  return error;
}

// ---- threads ----

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Fn real = reinterpret_cast<Fn>(next_symbol("pthread_create", nullptr));
  if (point("pthread_create", TRTET_FAULT_THREAD)) {
    const int error = armed_error(EAGAIN);
    return error;
  }
  return real(thread, attr, start, arg);
}
