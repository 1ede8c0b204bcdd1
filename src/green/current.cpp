#include "green/current.h"

#include "cuda/check.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {

// The calling thread's current context; nullptr when none is.
Result<CUcontext> current_context(const cuda::DriverApi& api) {
  CUcontext context = nullptr;
  TRTET_CU_CHECK(api.cuCtxGetCurrent(&context));
  return context;
}

// True when `context` (current) holds fewer SMs than its device: only a green-derived one does.
Result<bool> has_fewer_sms_than_device(const cuda::DriverApi& api, CUcontext context) {
  CUdevice device = 0;
  TRTET_CU_CHECK(api.cuCtxGetDevice(&device));
  CUdevResource mine{};
  TRTET_CU_CHECK(api.cuCtxGetDevResource(context, &mine, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResource all{};
  TRTET_CU_CHECK(api.cuDeviceGetDevResource(device, &all, CU_DEV_RESOURCE_TYPE_SM));
  return mine.sm.smCount < all.sm.smCount;
}

}  // namespace

Result<CUgreenCtx> current_green_context() {
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  TRTET_ASSIGN_OR_RETURN(const CUcontext context, current_context(*api));
  if (context == nullptr) return CUgreenCtx{nullptr};
  CUgreenCtx green = nullptr;
  // The NULL stream stands for the current context's default stream (see Note [green context current]).
  const CUresult by_null_stream = api->cuStreamGetGreenCtx(nullptr, &green);
  if (by_null_stream == CUDA_SUCCESS) return green;
  CUcontext owner = nullptr;
  green = nullptr;
  TRTET_CU_CHECK(api->cuStreamGetCtx_v2(CU_STREAM_LEGACY, &owner, &green));
  return green;
}

Result<bool> is_green_context_current() {
  auto green = current_green_context();
  if (green.ok()) return *green != nullptr;
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  TRTET_ASSIGN_OR_RETURN(const CUcontext context, current_context(*api));
  if (context == nullptr) return false;
  auto fewer = has_fewer_sms_than_device(*api, context);
  if (!fewer.ok()) return green.status();  // the first failure explains more
  return *fewer;
}

}  // namespace torch_tensorrt::executorch_backend::green
