// Caller-stream selection: which CUDA stream the delegate runs on for the calling thread.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>

namespace torch_tensorrt::executorch_backend {

/// CUDA's stream handle 0 (the default stream: the legacy one unless the application is compiled
/// for per-thread default streams), for a CudaStreamGuard that selects it on purpose.
inline constexpr cudaStream_t kNullStream = nullptr;

/// Selects `stream` as the caller stream of the calling thread for the guard's scope.
///
/// Every TensorRT delegate call made on this thread inside the scope enqueues its kernels and
/// copies on `stream` (see Note [Execute contract] in TensorRTBackend.h). Guards nest: the
/// innermost wins, and each destructor restores the selection that was in force before it.
/// The selection is per thread and lives in one shared library, so every shared object of the
/// process sees it. A null `stream` is an explicit selection of the legacy default stream: the
/// delegate then runs on its own stream, ordered after the legacy stream's work and before its
/// later work. The legacy stream cannot run inside a green context; a call with a green context
/// current and a default stream selected fails with a message saying so.
///
/// The compiler checks what is selected: a literal `0` or `nullptr` does not compile (it would
/// select the legacy stream by accident, as `CudaStreamGuard guard(0)` did). Name the default
/// streams instead: kNullStream (handle 0), cudaStreamLegacy, cudaStreamPerThread.
class CudaStreamGuard {
 public:
  explicit CudaStreamGuard(cudaStream_t stream) noexcept;
  CudaStreamGuard(int) = delete;             // a literal 0: name the stream (kNullStream, cudaStreamLegacy)
  CudaStreamGuard(std::nullptr_t) = delete;  // likewise
  ~CudaStreamGuard();

  CudaStreamGuard() = delete;                                   // a guard exists to select a stream: name it
  CudaStreamGuard(const CudaStreamGuard&) = delete;             // a copy would restore the previous selection twice
  CudaStreamGuard& operator=(const CudaStreamGuard&) = delete;  // the selection is tied to one scope
  CudaStreamGuard(CudaStreamGuard&&) = delete;                  // a moved guard could restore on another thread
  CudaStreamGuard& operator=(CudaStreamGuard&&) = delete;       // likewise

  /// The stream this guard selected.
  cudaStream_t stream() const noexcept { return stream_; }

 private:
  cudaStream_t stream_;
  /// What restores the previous selection: the saved selection, or, when built with ExecuTorch's
  /// CUDA stream extension, ExecuTorch's own guard (Note [Shared caller stream], caller_stream.cpp).
  alignas(alignof(std::max_align_t)) unsigned char restore_[32];
};

/// The stream selected for the calling thread by the innermost live CudaStreamGuard, or
/// std::nullopt when none is in scope. An explicitly selected null stream is a selection.
std::optional<cudaStream_t> caller_stream() noexcept;

}  // namespace torch_tensorrt::executorch_backend
