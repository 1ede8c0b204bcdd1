#include "cuda/check.h"

#include "common/log.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::cuda {

bool is_no_device_error(cudaError_t error) noexcept {
  return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
         error == cudaErrorCallRequiresNewerDriver;
}

Status runtime_status(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return Status::Ok();
  // The error is the Status's now, not the thread's last: an engine that checks cudaGetLastError
  // after its launches (TensorRT's enqueueV3 does) would otherwise take it, on this call or the
  // next, for its own. A sticky error stays: every later call reports it.
  (void)cudaGetLastError();
  ErrorCode code = ErrorCode::kInternal;
  if (is_no_device_error(error)) code = ErrorCode::kNoDevice;
  if (error == cudaErrorMemoryAllocation) code = ErrorCode::kMemoryAllocationFailed;
  if (error == cudaErrorInvalidDevice) code = ErrorCode::kInvalidArgument;
  return make_error(code, "%s failed at %s:%d: %s (%s)", call, file, line, cudaGetErrorString(error),
                    cudaGetErrorName(error));
}

Status driver_status(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  ErrorCode code = ErrorCode::kInternal;
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_NOT_INITIALIZED) code = ErrorCode::kNoDevice;
  if (result == CUDA_ERROR_OUT_OF_MEMORY) code = ErrorCode::kMemoryAllocationFailed;
  if (result == CUDA_ERROR_INVALID_VALUE || result == CUDA_ERROR_INVALID_DEVICE ||
      result == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) {
    code = ErrorCode::kInvalidArgument;
  }
  return make_error(code, "%s failed at %s:%d: %s", call, file, line, driver_error_string(result));
}

void warn_on_error(cudaError_t error, const char* call, const char* file, int line) noexcept {
  if (error == cudaSuccess) return;
  log(LogLevel::kWarning, "%s failed at %s:%d: %s (%s)", call, file, line, cudaGetErrorString(error),
      cudaGetErrorName(error));
  (void)cudaGetLastError();  // clear the sticky error so the next checked call is not blamed for it
}

}  // namespace torch_tensorrt::executorch_backend::cuda
