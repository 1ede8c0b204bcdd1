// Which stream a call runs on, and what that stream is: the one place that decides it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>

#include "common/status.h"
#include "cuda/stream_id.h"
#include "session/call.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// The stream choice of work queued now on this thread (choose_stream): the CudaStreamGuard's
/// stream or the fallback, refused where a green context is current and the choice is a
/// default-stream handle (Note [green context current] in green/current.h).
Result<StreamChoice> current_stream_choice();

/// Resolves each call's stream for one engine: the caller's choice (policy.h, choose_stream), the
/// session's own stream where that choice is a default-stream handle (an engine never receives
/// one), the stream's device checked against the engine's, its id, green context and capture
/// state. Owns the session's own stream, which also runs the session's housekeeping, and a small
/// cache of where recent streams belong.
class StreamResolver {
 public:
  StreamResolver() noexcept = default;
  ~StreamResolver() { reset(); }
  StreamResolver(const StreamResolver&) = delete;             // owns a stream
  StreamResolver& operator=(const StreamResolver&) = delete;

  /// Makes the own stream on the current device (the engine's).
  Status initialize();
  /// Synchronizes and destroys the own stream (no-throw).
  void reset() noexcept;

  /// The stream of a call to an engine of `engine_device`; `synchronous_enqueue`: the engine
  /// cannot be captured. kInvalidArgument for a stream of another device or a green context
  /// current without a usable stream; kNotSupported for capturing a default stream or an engine
  /// that enqueues synchronously.
  Result<ResolvedStream> resolve(int engine_device, bool synchronous_enqueue);

  cudaStream_t own_stream() const noexcept { return own_stream_; }
  cuda::StreamId own_id() const noexcept { return own_id_; }

 private:
  /// The device of `where.stream` (not capturing), with its id and green context filled in, from
  /// the cache by stream id: a stream's device and green context never change, and its id is
  /// never reused, so a hit saves two driver queries per call.
  Result<int> placement(ResolvedStream& where);

  struct Placement {
    cuda::StreamId id;  ///< unknown: empty
    int device = -1;
    CUgreenCtx green = nullptr;
  };
  cudaStream_t own_stream_ = nullptr;
  cuda::StreamId own_id_;
  std::array<Placement, 4> placements_{};
  std::size_t next_placement_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
