#include "engines/cuda_test_engine.h"

#include "cuda/check.h"
#include "cuda/device.h"
#include "engines/kernels.h"

namespace trtet_test {

CudaTestEngine::CudaTestEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases, int device,
                               const KernelOptions& options)
    : TestEngine(std::move(io), std::move(aliases), device), options_(options) {}

CudaTestEngine::~CudaTestEngine() {
  ex::cuda::DeviceGuard guard(device_);
  // Freed in order on the private stream: the delegate has waited for the engine's work by event.
  flags_.set_stream(private_stream_);
  flags_.reset();
  for (ex::cuda::DeviceBuffer& buffer : scratch_) {
    buffer.set_stream(private_stream_);
    buffer.reset();
  }
  if (private_stream_ != nullptr) TRTET_CUDA_WARN(cudaStreamDestroy(private_stream_));
}

Status CudaTestEngine::init_resources(std::size_t scratch_bytes, int scratch_count) {
  TRTET_RETURN_IF_ERROR(ex::cuda::check_device_index(device_));
  ex::cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&device_sms_, cudaDevAttrMultiProcessorCount, device_));
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&private_stream_, cudaStreamNonBlocking));
  if (options_.record_sms) {
    TRTET_ASSIGN_OR_RETURN(flags_, ex::cuda::DeviceBuffer::allocate(kSmFlagCount * sizeof(int), private_stream_));
    TRTET_CUDA_CHECK(cudaMemsetAsync(flags_.data(), 0, kSmFlagCount * sizeof(int), private_stream_));
  }
  for (int i = 0; i < scratch_count; ++i) {
    TRTET_ASSIGN_OR_RETURN(ex::cuda::DeviceBuffer buffer,
                           ex::cuda::DeviceBuffer::allocate(scratch_bytes > 0 ? scratch_bytes : 256, private_stream_));
    scratch_.push_back(std::move(buffer));
  }
  TRTET_CUDA_CHECK(cudaStreamSynchronize(private_stream_));  // our own stream only
  return Status::Ok();
}

Status CudaTestEngine::mark_sms(cudaStream_t stream) {
  if (!options_.record_sms) return Status::Ok();
  if (options_.marker_on_request && !probing_.load(std::memory_order_acquire)) return Status::Ok();
  return launch_mark_sms(sm_flags(), 4 * device_sms_, 5000, stream);
}

Status CudaTestEngine::clear_recorded_sms() {
  TRTET_CHECK_OR_RETURN(options_.record_sms, kInvalidState, "this engine does not record SMs (record_sms=0)");
  ex::cuda::DeviceGuard guard(device_);
  TRTET_CUDA_CHECK(cudaMemsetAsync(flags_.data(), 0, kSmFlagCount * sizeof(int), private_stream_));
  TRTET_CUDA_CHECK(cudaStreamSynchronize(private_stream_));
  probing_.store(true, std::memory_order_release);
  return Status::Ok();
}

Result<std::vector<int>> CudaTestEngine::recorded_sms() const {
  TRTET_CHECK_OR_RETURN(options_.record_sms, kInvalidState, "this engine does not record SMs (record_sms=0)");
  probing_.store(false, std::memory_order_release);  // the probe's calls are done (the caller synchronized)
  ex::cuda::DeviceGuard guard(device_);
  std::vector<int> host(kSmFlagCount, 0);
  TRTET_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), flags_.data(), kSmFlagCount * sizeof(int), cudaMemcpyDeviceToHost, private_stream_));
  TRTET_CUDA_CHECK(cudaStreamSynchronize(private_stream_));
  TRTET_CHECK_OR_RETURN(host[kMaxSmId] == 0, kInternal, "a kernel ran on an SM id of %d or more", kMaxSmId);
  std::vector<int> sms;
  for (int id = 0; id < kMaxSmId; ++id) {
    if (host[static_cast<std::size_t>(id)] != 0) sms.push_back(id);
  }
  return sms;
}

}  // namespace trtet_test
