#include "run/load.h"

#include <cstdio>

namespace trtet_run {
namespace {

constexpr int kThreads = 1024;
constexpr int kSharedBytes = 100 * 1024;

__global__ void flood_kernel(long long spin_ns) {
  extern __shared__ unsigned char scratch[];
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < static_cast<unsigned long long>(spin_ns)) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
  if (threadIdx.x == 0 && spin_ns < 0) scratch[0] = 1;  // keeps the shared allocation
}

}  // namespace

ex::Result<std::unique_ptr<Load>> Load::start(cudaStream_t stream, int device, int kernel_us) {
  int sms = 0;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  TRTET_CHECK_OR_RETURN(e == cudaSuccess, kInternal, "reading the SM count: %s", cudaGetErrorString(e));
  // ~100 KiB per block so that two blocks fill an SM; where the device has less, no shared memory.
  int shared = kSharedBytes;
  if (cudaFuncSetAttribute(flood_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) != cudaSuccess) {
    (void)cudaGetLastError();
    shared = 0;
  }
  std::unique_ptr<Load> load(new Load(stream, device, 2 * sms, shared, static_cast<long long>(kernel_us) * 1000));
  for (cudaEvent_t& event : load->events_) {
    e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync);
    TRTET_CHECK_OR_RETURN(e == cudaSuccess, kInternal, "cudaEventCreateWithFlags: %s", cudaGetErrorString(e));
  }
  flood_kernel<<<load->blocks_, kThreads, load->shared_bytes_, stream>>>(load->spin_ns_);
  e = cudaGetLastError();
  TRTET_CHECK_OR_RETURN(e == cudaSuccess, kInternal, "launching the load: %s", cudaGetErrorString(e));
  load->launched_ = 1;
  load->thread_ = std::thread([raw = load.get()] { raw->feed(); });
  return ex::Result<std::unique_ptr<Load>>(std::move(load));
}

void Load::feed() noexcept {
  (void)cudaSetDevice(device_);
  long long i = 0;
  while (!stop_.load()) {
    // Keep two kernels queued: wait for the one before last, then queue the next.
    cudaEvent_t& slot = events_[i % 2];
    if (i >= 2 && cudaEventSynchronize(slot) != cudaSuccess) break;
    flood_kernel<<<blocks_, kThreads, shared_bytes_, stream_>>>(spin_ns_);
    if (cudaGetLastError() != cudaSuccess || cudaEventRecord(slot, stream_) != cudaSuccess) break;
    launched_.fetch_add(1);
    ++i;
  }
}

Load::~Load() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (cudaStreamSynchronize(stream_) != cudaSuccess) {
    std::fprintf(stderr, "trtet-run: the load's stream failed: %s\n", cudaGetErrorString(cudaGetLastError()));
  }
  for (cudaEvent_t event : events_) {
    if (event != nullptr) (void)cudaEventDestroy(event);
  }
}

}  // namespace trtet_run
