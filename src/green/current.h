// Whether a green context is current on the calling thread.
#pragma once

#include <cuda.h>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::green {

/// The green context current on the calling thread (one made current through cuCtxFromGreenCtx and
/// cuCtxSetCurrent / cuCtxPushCurrent), or nullptr when an ordinary context, or none, is current.
///
/// Note [green context current]: while a green context is current, launches on cudaStreamPerThread
/// and on the legacy default stream fail with "invalid resource handle" (H200, CUDA 13), so a
/// caller with no stream of its own must not fall back to those. The driver answers through
/// cuStreamGetGreenCtx on the NULL stream, which resolves to the current context; where that query
/// fails, cuStreamGetCtx_v2 on CU_STREAM_LEGACY is asked instead.
Result<CUgreenCtx> current_green_context();

/// True when a green context is current on the calling thread (see Note [green context current]).
/// Where the driver cannot name the green context, falls back to comparing the current context's SM
/// resource (cuCtxGetDevResource) with its device's: a green-derived context has fewer SMs.
Result<bool> is_green_context_current();

}  // namespace torch_tensorrt::executorch_backend::green
