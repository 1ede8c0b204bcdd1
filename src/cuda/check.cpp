#include "cuda/check.h"

#include <cstring>

#include "common/log.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::cuda {

const char* source_path(const char* file) noexcept {
  if (file == nullptr) return "";
  // The build maps the source tree's prefix away (-fmacro-prefix-map, CMakeLists.txt), so __FILE__ is
  // already "src/..."; a file compiled without that map (a user's own build) keeps its path from the
  // last "src/", "tests/", "python/" or "triton/" on, never the build machine's directories.
  const char* best = nullptr;
  for (const char* root : {"/src/", "/tests/", "/python/", "/triton/", "/tools/", "/bench/"}) {
    for (const char* at = std::strstr(file, root); at != nullptr; at = std::strstr(at + 1, root)) {
      if (best == nullptr || at > best) best = at;
    }
  }
  return best != nullptr ? best + 1 : file;
}

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
  return make_error(code, "%s failed: %s (%s) [%s:%d]", call, cudaGetErrorString(error), cudaGetErrorName(error),
                    source_path(file), line);
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
  return make_error(code, "%s failed: %s [%s:%d]", call, driver_error_string(result), source_path(file), line);
}

void warn_on_error(cudaError_t error, const char* call, const char* file, int line) noexcept {
  if (error == cudaSuccess) return;
  log(LogLevel::kWarning, "%s failed: %s (%s) [%s:%d]", call, cudaGetErrorString(error), cudaGetErrorName(error),
      source_path(file), line);
  (void)cudaGetLastError();  // clear the sticky error so the next checked call is not blamed for it
}

}  // namespace torch_tensorrt::executorch_backend::cuda
