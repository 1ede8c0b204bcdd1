#include "cuda/stream_facts.h"

#include "cuda/check.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::cuda {

Result<int> stream_device(cudaStream_t stream) {
  int device = -1;
  TRTET_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

Result<CUgreenCtx> stream_green_context(cudaStream_t stream) {
  TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  CUgreenCtx green = nullptr;
  TRTET_CU_CHECK(api->cuStreamGetGreenCtx(reinterpret_cast<CUstream>(stream), &green));
  return green;
}

Result<bool> stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  TRTET_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  TRTET_CHECK_OR_RETURN(status != cudaStreamCaptureStatusInvalidated, kInvalidArgument,
                        "the stream's graph capture has been invalidated; end it before executing");
  return status == cudaStreamCaptureStatusActive;
}

Result<StreamFacts> stream_facts(cudaStream_t stream) {
  StreamFacts facts;
  TRTET_ASSIGN_OR_RETURN(facts.device, stream_device(stream));
  TRTET_ASSIGN_OR_RETURN(facts.green_context, stream_green_context(stream));
  TRTET_ASSIGN_OR_RETURN(facts.capturing, stream_is_capturing(stream));
  return facts;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
