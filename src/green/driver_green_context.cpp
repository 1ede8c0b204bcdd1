#include "green/driver_green_context.h"

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {

// Logs a failed driver call of a no-throw path; driver errors are not sticky, so nothing to clear.
void warn_driver(CUresult result, const char* call) noexcept {
  if (result == CUDA_SUCCESS) return;
  log(LogLevel::kWarning, "%s failed: %s", call, cuda::driver_error_string(result));
}

// Waits for the stream's queued work, then destroys it (no-throw).
void drop_stream(const cuda::DriverApi& api, CUstream stream) noexcept {
  warn_driver(api.cuStreamSynchronize(stream), "cuStreamSynchronize(green context stream)");
  warn_driver(api.cuStreamDestroy(stream), "cuStreamDestroy(green context stream)");
}

}  // namespace

DriverGreenContext::DriverGreenContext(DriverGreenContext&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      device_(std::exchange(other.device_, -1)),
      sm_count_(std::exchange(other.sm_count_, 0u)),
      streams_(std::move(other.streams_)) {
  other.streams_.clear();
}

DriverGreenContext& DriverGreenContext::operator=(DriverGreenContext&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::exchange(other.context_, nullptr);
    device_ = std::exchange(other.device_, -1);
    sm_count_ = std::exchange(other.sm_count_, 0u);
    streams_ = std::move(other.streams_);
    other.streams_.clear();
  }
  return *this;
}

Result<DriverGreenContext> DriverGreenContext::create(int device, CUdevResourceDesc desc) {
  TRTET_CHECK_OR_RETURN(desc != nullptr, kInvalidArgument, "a green context needs a resource descriptor (got null)");
  TRTET_RETURN_IF_ERROR(cuda::check_device_index(device));
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  CUdevice dev = 0;
  TRTET_CU_CHECK(api->cuDeviceGet(&dev, device));
  CUgreenCtx context = nullptr;
  TRTET_CU_CHECK(api->cuGreenCtxCreate(&context, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  DriverGreenContext owner(context, device, 0);  // owns it from here: destroyed on every error path below
  CUdevResource granted{};
  TRTET_CU_CHECK(api->cuGreenCtxGetDevResource(context, &granted, CU_DEV_RESOURCE_TYPE_SM));
  owner.sm_count_ = granted.sm.smCount;
  return Result<DriverGreenContext>(std::move(owner));
}

Result<cudaStream_t> DriverGreenContext::make_stream(int priority) {
  TRTET_CHECK_OR_RETURN(context_ != nullptr, kInvalidState, "make_stream on an empty DriverGreenContext");
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  streams_.reserve(streams_.size() + 1);  // so that recording the stream below cannot fail
  CUstream stream = nullptr;
  TRTET_CU_CHECK(api->cuGreenCtxStreamCreate(&stream, context_, CU_STREAM_NON_BLOCKING, priority));
  streams_.push_back(stream);
  return reinterpret_cast<cudaStream_t>(stream);
}

Status DriverGreenContext::destroy_stream(cudaStream_t stream) {
  const auto it = std::find(streams_.begin(), streams_.end(), reinterpret_cast<CUstream>(stream));
  TRTET_CHECK_OR_RETURN(stream != nullptr && it != streams_.end(), kNotFound,
                        "stream %p was not made by this green context", static_cast<void*>(stream));
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  TRTET_CU_CHECK(api->cuStreamSynchronize(*it));
  const CUresult destroyed = api->cuStreamDestroy(*it);
  streams_.erase(it);  // once destroy was attempted the handle is no longer ours to use
  TRTET_CU_CHECK(destroyed);
  return Status::Ok();
}

Result<CUcontext> DriverGreenContext::as_context() const {
  TRTET_CHECK_OR_RETURN(context_ != nullptr, kInvalidState, "as_context on an empty DriverGreenContext");
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  CUcontext context = nullptr;
  TRTET_CU_CHECK(api->cuCtxFromGreenCtx(&context, context_));
  return context;
}

DriverGreenContext::Released DriverGreenContext::release() noexcept {
  Released released;
  released.context = std::exchange(context_, nullptr);
  released.streams = std::move(streams_);
  streams_.clear();
  device_ = -1;
  sm_count_ = 0;
  return released;
}

void DriverGreenContext::reset() noexcept {
  if (context_ == nullptr) return;
  auto api = cuda::driver();  // loaded when the context was made, so this cannot fail now
  if (api.ok()) {
    for (CUstream stream : streams_) drop_stream(**api, stream);
    warn_driver((*api)->cuGreenCtxDestroy(context_), "cuGreenCtxDestroy(context_)");
  }
  streams_.clear();
  context_ = nullptr;
  device_ = -1;
  sm_count_ = 0;
}

}  // namespace torch_tensorrt::executorch_backend::green
