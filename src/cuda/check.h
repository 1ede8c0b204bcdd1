// The one CUDA check: a failing runtime or driver call becomes a Status naming the call, CUDA's own
// message, then the repository-relative file:line ("cudaX(...) failed: <cause> (<name>) [src/f.cpp:12]"):
// the cause comes before the location, so a log line cut short still says why.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// `file` as a message shows it: relative to the repository ("src/cuda/check.cpp"), whatever the
/// directory it was built in, so a message's length and text do not depend on the build machine.
const char* source_path(const char* file) noexcept;

/// The Status for runtime error `error` raised by `call` at `file:line`; Ok for cudaSuccess.
/// No device / no driver map to kNoDevice, out of memory to kMemoryAllocationFailed, the rest to kInternal.
Status runtime_status(cudaError_t error, const char* call, const char* file, int line);

/// The same for a driver-API CUresult.
Status driver_status(CUresult result, const char* call, const char* file, int line);

/// Logs a failure of `call` as a warning and clears the thread's sticky runtime error.
/// For destructors and other places that cannot return a Status.
void warn_on_error(cudaError_t error, const char* call, const char* file, int line) noexcept;

/// True for the errors that mean "this machine has no usable GPU" (no device, or no/old driver).
bool is_no_device_error(cudaError_t error) noexcept;

}  // namespace torch_tensorrt::executorch_backend::cuda

/// Returns a Status from the enclosing function if the CUDA runtime call `call` fails.
#define TRTET_CUDA_CHECK(call)                                                         \
  do {                                                                                 \
    const cudaError_t trtet_cuda_error_ = (call);                                      \
    if (trtet_cuda_error_ != cudaSuccess) {                                            \
      return ::torch_tensorrt::executorch_backend::cuda::runtime_status(               \
          trtet_cuda_error_, #call, __FILE__, __LINE__);                               \
    }                                                                                  \
  } while (0)

/// Returns a Status from the enclosing function if the driver call `call` fails.
#define TRTET_CU_CHECK(call)                                                           \
  do {                                                                                 \
    const CUresult trtet_cu_result_ = (call);                                          \
    if (trtet_cu_result_ != CUDA_SUCCESS) {                                            \
      return ::torch_tensorrt::executorch_backend::cuda::driver_status(                \
          trtet_cu_result_, #call, __FILE__, __LINE__);                                \
    }                                                                                  \
  } while (0)

/// Warn-only variant for destructors: logs and clears the sticky error, never returns.
#define TRTET_CUDA_WARN(call) \
  ::torch_tensorrt::executorch_backend::cuda::warn_on_error((call), #call, __FILE__, __LINE__)
