// What can be known about a CUDA stream: its device, its green context, its capture state.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// The device `stream` belongs to (cudaStreamGetDevice; special handles resolve to the current
/// device). `capturing` says whether the stream is capturing: cudaStreamGetDevice is not permitted
/// then, so the device is read from the stream's context through the driver instead.
Result<int> stream_device(cudaStream_t stream, bool capturing);
/// The same, asking the capture status first.
Result<int> stream_device(cudaStream_t stream);

/// The green context `stream` was created on, or nullptr for an ordinary stream.
Result<CUgreenCtx> stream_green_context(cudaStream_t stream);

/// True while `stream` is capturing into a graph (active capture; an invalidated capture is an error).
Result<bool> stream_is_capturing(cudaStream_t stream);

/// The facts above in one value.
struct StreamFacts {
  int device = -1;
  CUgreenCtx green_context = nullptr;
  bool capturing = false;
};
Result<StreamFacts> stream_facts(cudaStream_t stream);

}  // namespace torch_tensorrt::executorch_backend::cuda
