// Large copies each way on a stream of their own, keeping the copy engines busy for milliseconds:
// what a small transfer must not wait behind (Note [small copies] in src/staging/small_copy.cu).
// Made, queued and freed by one object, so a failed assertion leaves nothing behind.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace trtet_test {

class LargeCopies {
 public:
  /// Allocates `bytes` of pinned host and of device memory, a stream and an event; ok() says whether
  /// all of it was made.
  explicit LargeCopies(std::size_t bytes = std::size_t{256} << 20) : bytes_(bytes) {
    ok_ = cudaHostAlloc(&host_, bytes, cudaHostAllocPortable) == cudaSuccess &&
          cudaMalloc(&device_, bytes) == cudaSuccess &&
          cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
          cudaEventCreateWithFlags(&done_, cudaEventDisableTiming) == cudaSuccess;
  }
  ~LargeCopies() {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (host_ != nullptr) cudaFreeHost(host_);
  }
  LargeCopies(const LargeCopies&) = delete;
  LargeCopies& operator=(const LargeCopies&) = delete;

  bool ok() const noexcept { return ok_; }
  /// Queues the copy to the device, the copy back and the event after them.
  bool start() {
    return cudaMemcpyAsync(device_, host_, bytes_, cudaMemcpyHostToDevice, stream_) == cudaSuccess &&
           cudaMemcpyAsync(host_, device_, bytes_, cudaMemcpyDeviceToHost, stream_) == cudaSuccess &&
           cudaEventRecord(done_, stream_) == cudaSuccess;
  }
  /// True while the copies run: asked at once, never waited for.
  bool running() const {
    const cudaError_t state = cudaEventQuery(done_);
    if (state == cudaErrorNotReady) (void)cudaGetLastError();
    return state == cudaErrorNotReady;
  }
  /// Waits for them: cudaStreamSynchronize's result.
  cudaError_t finish() const { return cudaStreamSynchronize(stream_); }

 private:
  std::size_t bytes_;
  bool ok_ = false;
  void* host_ = nullptr;
  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

}  // namespace trtet_test
