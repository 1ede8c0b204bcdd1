#include "cuda/device.h"

#include "cuda/check.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::cuda {

Result<int> device_count() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return runtime_status(error, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
  }
  if (count == 0) return make_error(ErrorCode::kNoDevice, "no CUDA device is visible");
  return count;
}

Status check_device_index(int device) {
  TRTET_ASSIGN_OR_RETURN(const int count, device_count());
  TRTET_CHECK_OR_RETURN(device >= 0 && device < count, kInvalidArgument,
                        "device index %d is out of range: %d device(s) visible", device, count);
  return Status::Ok();
}

DeviceGuard::DeviceGuard(int device) noexcept {
  const cudaError_t get = cudaGetDevice(&previous_);
  if (get != cudaSuccess) {
    (void)cudaGetLastError();
    status_ = runtime_status(get, "cudaGetDevice(&previous_)", __FILE__, __LINE__);
    return;
  }
  if (previous_ == device) return;
  // The context current now may be a green context of previous_: the restore puts it back, not
  // just its device (cudaSetDevice would make the device's primary context current instead).
  if (auto api = driver(); api.ok()) {
    CUcontext context = nullptr;
    if ((*api)->cuCtxGetCurrent(&context) == CUDA_SUCCESS) previous_context_ = context;
  }
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess) {
    (void)cudaGetLastError();
    status_ = runtime_status(set, "cudaSetDevice(device)", __FILE__, __LINE__);
    return;
  }
  switched_ = true;
}

DeviceGuard::~DeviceGuard() {
  if (!switched_) return;
  if (previous_context_ != nullptr) {
    auto api = driver();
    if (api.ok() && (*api)->cuCtxSetCurrent(previous_context_) == CUDA_SUCCESS) return;
  }
  TRTET_CUDA_WARN(cudaSetDevice(previous_));
}

}  // namespace torch_tensorrt::executorch_backend::cuda
