#include "cuda/driver.h"

#include <cuda_runtime_api.h>

#include <mutex>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::cuda {
namespace {

// The ABI version each function is requested at: the version its PFN typedef names.
template <typename Fn>
Status load(Fn& slot, const char* symbol, unsigned int version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    if (is_no_device_error(error)) {
      return make_error(ErrorCode::kNoDevice, "CUDA driver unavailable while loading %s: %s", symbol,
                        cudaGetErrorString(error));
    }
    return make_error(ErrorCode::kInternal, "cudaGetDriverEntryPointByVersion(%s, %u) failed: %s", symbol, version,
                      cudaGetErrorString(error));
  }
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    return make_error(ErrorCode::kIncompatible, "the CUDA driver has no %s at ABI version %u (result %d)", symbol,
                      version, static_cast<int>(found));
  }
  slot = reinterpret_cast<Fn>(fn);
  return Status::Ok();
}

Status load_all(DriverApi& api) {
#define TRTET_LOAD(name, version) TRTET_RETURN_IF_ERROR(load(api.name, #name, version))
  TRTET_LOAD(cuGetErrorString, 6000);
  TRTET_LOAD(cuCtxGetCurrent, 4000);
  TRTET_LOAD(cuCtxFromGreenCtx, 12040);
  TRTET_LOAD(cuDeviceGet, 2000);
  TRTET_LOAD(cuDeviceGetDevResource, 12040);
  TRTET_LOAD(cuDevSmResourceSplitByCount, 12040);
  TRTET_LOAD(cuDevResourceGenerateDesc, 12040);
  TRTET_LOAD(cuGreenCtxCreate, 12040);
  TRTET_LOAD(cuGreenCtxDestroy, 12040);
  TRTET_LOAD(cuGreenCtxGetDevResource, 12040);
  TRTET_LOAD(cuGreenCtxStreamCreate, 12050);
  TRTET_LOAD(cuStreamGetGreenCtx, 12040);
  TRTET_LOAD(cuStreamDestroy, 4000);
  TRTET_LOAD(cuCtxSetCurrent, 4000);
  TRTET_LOAD(cuCtxGetDevice, 2000);
  TRTET_LOAD(cuCtxGetDevResource, 12040);
  TRTET_RETURN_IF_ERROR(load(api.cuStreamGetCtx_v2, "cuStreamGetCtx", 12050));
  TRTET_LOAD(cuStreamSynchronize, 2000);
  TRTET_LOAD(cuStreamIsCapturing, 10000);
  TRTET_LOAD(cuStreamGetId, 12000);
  TRTET_LOAD(cuEventRecord, 2000);
  TRTET_LOAD(cuPointerGetAttribute, 4000);
#undef TRTET_LOAD
  if (!load(api.cuCtxGetDevice_v2, "cuCtxGetDevice", 13000).ok()) api.cuCtxGetDevice_v2 = nullptr;  // optional
  return Status::Ok();
}

Status load_vmm(VmmApi& api) {
#define TRTET_LOAD(name, version) TRTET_RETURN_IF_ERROR(load(api.name, #name, version))
  TRTET_LOAD(cuDeviceGet, 2000);
  TRTET_LOAD(cuDeviceGetAttribute, 2000);
  TRTET_LOAD(cuMemGetAllocationGranularity, 10020);
  TRTET_LOAD(cuMemAddressReserve, 10020);
  TRTET_LOAD(cuMemAddressFree, 10020);
  TRTET_LOAD(cuMemCreate, 10020);
  TRTET_LOAD(cuMemRelease, 10020);
  TRTET_LOAD(cuMemMap, 10020);
  TRTET_LOAD(cuMemUnmap, 10020);
  TRTET_LOAD(cuMemSetAccess, 10020);
  TRTET_LOAD(cuMemGetAccess, 10020);
#undef TRTET_LOAD
  return Status::Ok();
}

}  // namespace

Result<const VmmApi*> vmm_driver() {
  static VmmApi api{};
  static Status loaded = Status(ErrorCode::kInternal, "VMM driver table not loaded");
  static std::once_flag once;
  std::call_once(once, [] { loaded = load_vmm(api); });
  if (!loaded.ok()) return loaded;
  return &api;
}

Result<const DriverApi*> driver() {
  static DriverApi api{};
  static Status loaded = Status(ErrorCode::kInternal, "driver table not loaded");
  static std::once_flag once;
  std::call_once(once, [] { loaded = load_all(api); });
  if (!loaded.ok()) return loaded;
  return &api;
}

const char* driver_error_string(CUresult result) noexcept {
  auto api = driver();
  const char* text = nullptr;
  if (api.ok() && (*api)->cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) return text;
  return "unknown CUDA driver error";
}

}  // namespace torch_tensorrt::executorch_backend::cuda
