#include "cuda/event.h"

#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::cuda {

Result<Event> Event::create(unsigned int flags) {
  cudaEvent_t event = nullptr;
  TRTET_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  return Event(event);
}

Status Event::record(cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(event_ != nullptr, kInvalidState, "record on an empty Event");
  if (!is_default_stream_handle(stream)) {
    TRTET_ASSIGN_OR_RETURN(const DriverApi* api, driver());
    TRTET_CU_CHECK(api->cuEventRecord(reinterpret_cast<CUevent>(event_), reinterpret_cast<CUstream>(stream)));
    return Status::Ok();
  }
  TRTET_CUDA_CHECK(cudaEventRecord(event_, stream));
  return Status::Ok();
}

Result<bool> Event::query() const {
  TRTET_CHECK_OR_RETURN(event_ != nullptr, kInvalidState, "query on an empty Event");
  const cudaError_t error = cudaEventQuery(event_);
  if (error == cudaSuccess) return true;
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  return runtime_status(error, "cudaEventQuery(event_)", __FILE__, __LINE__);
}

Status Event::synchronize() const {
  TRTET_CHECK_OR_RETURN(event_ != nullptr, kInvalidState, "synchronize on an empty Event");
  TRTET_CUDA_CHECK(cudaEventSynchronize(event_));
  return Status::Ok();
}

void Event::reset() noexcept {
  if (event_ != nullptr) TRTET_CUDA_WARN(cudaEventDestroy(event_));
  event_ = nullptr;
}

}  // namespace torch_tensorrt::executorch_backend::cuda
