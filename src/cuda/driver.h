// Driver-API functions, fetched once through cudaGetDriverEntryPointByVersion, so that no
// binary of the project links libcuda and test binaries start on machines without a driver.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// The driver functions the project uses. Every pointer is non-null in a table returned by driver().
struct DriverApi {
  PFN_cuGetErrorString_v6000 cuGetErrorString;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
  PFN_cuCtxFromGreenCtx_v12040 cuCtxFromGreenCtx;
  PFN_cuDeviceGet_v2000 cuDeviceGet;
  PFN_cuDeviceGetDevResource_v12040 cuDeviceGetDevResource;
  PFN_cuDevSmResourceSplitByCount_v12040 cuDevSmResourceSplitByCount;
  PFN_cuDevResourceGenerateDesc_v12040 cuDevResourceGenerateDesc;
  PFN_cuGreenCtxCreate_v12040 cuGreenCtxCreate;
  PFN_cuGreenCtxDestroy_v12040 cuGreenCtxDestroy;
  PFN_cuGreenCtxGetDevResource_v12040 cuGreenCtxGetDevResource;
  PFN_cuGreenCtxStreamCreate_v12050 cuGreenCtxStreamCreate;
  PFN_cuStreamGetGreenCtx_v12040 cuStreamGetGreenCtx;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
  PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
  PFN_cuCtxGetDevResource_v12040 cuCtxGetDevResource;
  PFN_cuStreamGetCtx_v12050 cuStreamGetCtx_v2;
  /// cuCtxGetDevice_v2 (symbol "cuCtxGetDevice" at ABI 13000): the device of a given context.
  /// Optional: null on drivers older than CUDA 13.
  CUresult(CUDAAPI* cuCtxGetDevice_v2)(CUdevice* device, CUcontext context);  ///< symbol "cuStreamGetCtx" at ABI 12050
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
  // Called on every execute, through the driver because its entry points are cheaper than their
  // runtime wrappers (docs/PERFORMANCE.md, host_overhead). Only for stream objects, never for a
  // default-stream handle, which the driver resolves against the current context.
  PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
  PFN_cuStreamGetId_v12000 cuStreamGetId;
  PFN_cuEventRecord_v2000 cuEventRecord;
  /// Whether the device may write a caller's pinned memory (its access flags), before a copy kernel
  /// writes there (session/memory_kind.cpp; Note [small copies]).
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute;
};

/// The driver's virtual memory management functions (the staging arenas, staging/arena.h), in a
/// table of their own so that a driver lacking one of them leaves every other use of the driver
/// intact: the arenas then fall back to memory pools.
struct VmmApi {
  PFN_cuDeviceGet_v2000 cuDeviceGet;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree;
  PFN_cuMemCreate_v10020 cuMemCreate;
  PFN_cuMemRelease_v10020 cuMemRelease;
  PFN_cuMemMap_v10020 cuMemMap;
  PFN_cuMemUnmap_v10020 cuMemUnmap;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess;
  PFN_cuMemGetAccess_v10020 cuMemGetAccess;
};

/// The VMM table, loaded on first use (thread-safe). kNoDevice where no driver is present,
/// kIncompatible where the driver lacks one of its functions.
Result<const VmmApi*> vmm_driver();

/// The driver table, loaded on first use (thread-safe). kNoDevice where no driver is present,
/// kIncompatible where the driver lacks a function (green contexts need CUDA 12.4+ drivers).
Result<const DriverApi*> driver();

/// CUDA's message for `result` (through cuGetErrorString when the driver is there).
const char* driver_error_string(CUresult result) noexcept;

}  // namespace torch_tensorrt::executorch_backend::cuda
