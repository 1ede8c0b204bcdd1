#include "cuda/stream_facts.h"

#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/stream_id.h"

namespace torch_tensorrt::executorch_backend::cuda {

namespace {

// The device of a capturing stream, from its (green) context: none of these calls is a stream
// operation, so none disturbs the capture.
Result<int> capturing_stream_device(cudaStream_t stream) {
  TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  TRTET_CHECK_OR_RETURN(api->cuCtxGetDevice_v2 != nullptr, kNotSupported,
                        "the device of a capturing stream needs cuCtxGetDevice_v2 (CUDA 13 driver)");
  CUcontext context = nullptr;
  CUgreenCtx green = nullptr;
  TRTET_CU_CHECK(api->cuStreamGetCtx_v2(reinterpret_cast<CUstream>(stream), &context, &green));
  if (context == nullptr && green != nullptr) TRTET_CU_CHECK(api->cuCtxFromGreenCtx(&context, green));
  CUdevice device = -1;
  TRTET_CU_CHECK(api->cuCtxGetDevice_v2(&device, context));
  return static_cast<int>(device);
}

}  // namespace

Result<int> stream_device(cudaStream_t stream, bool capturing) {
  if (capturing) return capturing_stream_device(stream);
  int device = -1;
  TRTET_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

Result<int> stream_device(cudaStream_t stream) {
  TRTET_ASSIGN_OR_RETURN(const bool capturing, stream_is_capturing(stream));
  return stream_device(stream, capturing);
}

Result<unsigned long long> stream_id(cudaStream_t stream) {
  unsigned long long id = 0;
  if (is_default_stream_handle(stream)) {
    TRTET_CUDA_CHECK(cudaStreamGetId(stream, &id));
    return id;
  }
  TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  TRTET_CU_CHECK(api->cuStreamGetId(reinterpret_cast<CUstream>(stream), &id));
  return id;
}

Result<CUgreenCtx> stream_green_context(cudaStream_t stream) {
  TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  CUgreenCtx green = nullptr;
  TRTET_CU_CHECK(api->cuStreamGetGreenCtx(reinterpret_cast<CUstream>(stream), &green));
  return green;
}

Result<bool> stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (is_default_stream_handle(stream)) {
    TRTET_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  } else {
    TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
    CUstreamCaptureStatus driver_status = CU_STREAM_CAPTURE_STATUS_NONE;
    TRTET_CU_CHECK(api->cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &driver_status));
    status = static_cast<cudaStreamCaptureStatus>(driver_status);
  }
  TRTET_CHECK_OR_RETURN(status != cudaStreamCaptureStatusInvalidated, kInvalidArgument,
                        "the stream's graph capture has been invalidated; end it before executing");
  return status == cudaStreamCaptureStatusActive;
}

Result<StreamFacts> stream_facts(cudaStream_t stream) {
  StreamFacts facts;
  TRTET_ASSIGN_OR_RETURN(facts.capturing, stream_is_capturing(stream));
  TRTET_ASSIGN_OR_RETURN(facts.device, stream_device(stream, facts.capturing));
  TRTET_ASSIGN_OR_RETURN(facts.green_context, stream_green_context(stream));
  return facts;
}

StreamId id_of(cudaStream_t stream) noexcept {
  const Result<unsigned long long> id = stream_id(stream);
  return id.ok() ? StreamId::of(*id) : StreamId();
}

}  // namespace torch_tensorrt::executorch_backend::cuda
