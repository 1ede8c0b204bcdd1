// What can be known about a CUDA stream: its device, its green context, its capture state.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// The handles that name a default stream rather than a stream object: the legacy stream (0 or
/// cudaStreamLegacy) and the calling thread's per-thread stream.
inline bool is_default_stream_handle(cudaStream_t stream) noexcept {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

/// The process-unique id of `stream` (cudaStreamGetId): handles are reused after a stream is
/// destroyed, ids never are. Stream objects are asked through the driver, which is cheaper than the
/// runtime (docs/PERFORMANCE.md, host_overhead).
Result<unsigned long long> stream_id(cudaStream_t stream);

/// The device `stream` belongs to (cudaStreamGetDevice; special handles resolve to the current
/// device). `capturing` says whether the stream is capturing: cudaStreamGetDevice is not permitted
/// then, so the device is read from the stream's context through the driver instead.
Result<int> stream_device(cudaStream_t stream, bool capturing);
/// The same, asking the capture status first.
Result<int> stream_device(cudaStream_t stream);

/// The green context `stream` was created on, or nullptr for an ordinary stream.
Result<CUgreenCtx> stream_green_context(cudaStream_t stream);

/// True while `stream` is capturing into a graph (active capture; an invalidated capture is an error).
/// Stream objects are asked through the driver; default-stream handles through the runtime.
Result<bool> stream_is_capturing(cudaStream_t stream);

/// The facts above in one value.
struct StreamFacts {
  int device = -1;
  CUgreenCtx green_context = nullptr;
  bool capturing = false;
};
Result<StreamFacts> stream_facts(cudaStream_t stream);

}  // namespace torch_tensorrt::executorch_backend::cuda
