// What TensorRTBackend::init() returns as the DelegateHandle: one loaded engine's session.
#pragma once

#include <mutex>
#include <vector>

#include "common/status.h"
#include "delegate/session.h"
#include "delegate/tensor_view.h"

namespace torch_tensorrt::executorch_backend {

/// Placed in the method's runtime allocator by init() and destroyed in place by destroy().
struct DelegateHandle {
  explicit DelegateHandle(engine::EnginePtr engine) noexcept : session(std::move(engine)) {}

  delegate::Session session;
  /// Not Ok when the method loaded without a usable GPU: every execute() reports it.
  Status no_gpu;
  /// Per-call scratch, sized at init and reused; guarded because ExecuTorch may call execute()
  /// on one handle from several threads (the session serializes the calls themselves).
  std::mutex views_mutex;
  std::vector<delegate::TensorView> views;
};

}  // namespace torch_tensorrt::executorch_backend
