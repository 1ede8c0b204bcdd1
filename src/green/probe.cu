#include "green/probe.h"

#include <algorithm>
#include <iterator>

#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_buffer.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {

// SM ids are below %nsmid, which is well under this on every GPU so far; a larger id is reported.
constexpr unsigned kMaxSmId = 1024;
constexpr unsigned kThreadsPerBlock = 32;

// Each block marks the SM it runs on, then spins so that the grid stays resident long enough for
// the block scheduler to reach every SM the stream may use. seen[kMaxSmId] flags an id out of range.
__global__ void record_sm_ids(int* seen, long long spin_cycles) {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) seen[sm < kMaxSmId ? sm : kMaxSmId] = 1;
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
}

}  // namespace

Result<std::vector<int>> probe_sms(cudaStream_t stream, const ProbeOptions& options) {
  TRTET_ASSIGN_OR_RETURN(const bool capturing, cuda::stream_is_capturing(stream));
  TRTET_CHECK_OR_RETURN(!capturing, kInvalidArgument, "the SM probe cannot run on a stream that is capturing a graph");
  TRTET_ASSIGN_OR_RETURN(const int device, cuda::stream_device(stream));
  cuda::DeviceGuard guard(device);
  TRTET_RETURN_IF_ERROR(guard.status());
  int sm_count = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));

  const std::size_t bytes = (kMaxSmId + 1) * sizeof(int);
  TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer seen, cuda::DeviceBuffer::allocate(bytes, stream));
  TRTET_CUDA_CHECK(cudaMemsetAsync(seen.data(), 0, bytes, stream));
  const unsigned blocks = std::max(1u, options.blocks_per_sm) * static_cast<unsigned>(sm_count);
  record_sm_ids<<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<int*>(seen.data()),
                                                        static_cast<long long>(options.spin_cycles));
  TRTET_CUDA_CHECK(cudaGetLastError());
  std::vector<int> host(kMaxSmId + 1, 0);
  TRTET_CUDA_CHECK(cudaMemcpyAsync(host.data(), seen.data(), bytes, cudaMemcpyDeviceToHost, stream));
  seen.reset();  // cudaFreeAsync, in order on `stream`
  TRTET_CUDA_CHECK(cudaStreamSynchronize(stream));

  TRTET_CHECK_OR_RETURN(host[kMaxSmId] == 0, kInternal, "the SM probe saw an SM id of %u or more", kMaxSmId);
  std::vector<int> sms;
  for (unsigned id = 0; id < kMaxSmId; ++id) {
    if (host[id] != 0) sms.push_back(static_cast<int>(id));
  }
  return sms;
}

std::size_t shared_sms(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both.size();
}

}  // namespace torch_tensorrt::executorch_backend::green
