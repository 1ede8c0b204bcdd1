// The last call of a session, kept when the next call with the same arguments on the same stream
// would take exactly its path again (Note [repeated calls] in last_call.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "cuda/stream_id.h"
#include "session/call.h"
#include "session/tensor_view.h"

namespace torch_tensorrt::executorch_backend::delegate {

class LastCall {
 public:
  /// True when a call on `where` with `args` repeats the kept call.
  bool repeated_by(const TensorView* args, std::size_t count, const ResolvedStream& where) const noexcept;
  /// Keeps the call of `plan`, ordered as `order` says and run as `run` says, if it can be repeated
  /// as it is: a graph launch or a plain enqueue, not capturing, on a stream of the caller's,
  /// returning at once, with no wait across streams and no graph of the session's captured by a
  /// caller.
  void remember(const TensorView* args, std::size_t count, const CallPlan& plan, const CallOrder& order,
                const EngineRun& run);
  /// Drops the kept call: the next call takes the full path.
  void forget() noexcept { kept_ = false; }
  /// The kept call again, after its repeat was queued.
  void keep_again() noexcept { kept_ = true; }

  cudaGraphExec_t graph() const noexcept { return exec_; }  ///< its graph (owned by the runner), or null: an enqueue
  int profile() const noexcept { return profile_; }

 private:
  bool kept_ = false;
  cudaGraphExec_t exec_ = nullptr;
  cuda::StreamId stream_;
  int profile_ = 0;
  std::vector<TensorView> args_;  ///< as the call left them (outputs resized)
};

}  // namespace torch_tensorrt::executorch_backend::delegate
