// The SM probe: measures which SMs a stream's kernels really run on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::green {

/// How hard the probe saturates: enough blocks that every SM the stream may use receives some,
/// each spinning long enough that no SM can drain the grid before the others start.
struct ProbeOptions {
  unsigned blocks_per_sm = 16;        ///< grid = blocks_per_sm x the device's SM count (one warp each)
  unsigned long long spin_cycles = 40000;  ///< per block, by clock64 (~20 us at 2 GHz)
};

/// The SM ids (%smid), sorted and unique, on which a saturating kernel launched on `stream` ran.
///
/// Everything is ordered on `stream`: stream-ordered allocation (cudaMallocAsync/cudaFreeAsync),
/// the kernel, the copy back; then only `stream` is synchronized (never the device). A green
/// context's stream must report at most its granted SM count. kInvalidArgument while `stream` is
/// capturing; kNoDevice without a GPU; kInternal for a CUDA failure.
Result<std::vector<int>> probe_sms(cudaStream_t stream, const ProbeOptions& options = {});

/// How many SM ids appear in both sorted, unique lists.
std::size_t shared_sms(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace torch_tensorrt::executorch_backend::green
