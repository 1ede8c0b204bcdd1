// What TensorRTBackend::init() returns as the DelegateHandle: one loaded engine's session.
#pragma once

#include "common/status.h"
#include "session/session.h"
#include "backend/gpu_timing.h"

namespace torch_tensorrt::executorch_backend {

/// Placed in the method's runtime allocator by init() and destroyed in place by destroy().
struct DelegateHandle {
  DelegateHandle(engine::EnginePtr engine, delegate::SessionOptions options) noexcept
      : session(std::move(engine), options) {}

  /// Declared before the session, so it outlives it (the session's marks come from it).
  DelegateTimer profiler;
  delegate::Session session;
  /// Not Ok when the method loaded without a usable GPU: every execute() reports it.
  Status no_gpu;
};

}  // namespace torch_tensorrt::executorch_backend
