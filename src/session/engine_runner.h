// The engine's work for one call: its enqueue on the call's stream, with auxiliary streams on the
// stream's green context, or a delegate-owned CUDA graph of it (Note [delegate graphs] in
// graph_cache.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "session/aux_streams.h"
#include "session/call.h"
#include "session/graph_cache.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Runs one session's engine. Called under the session's lock, with the engine's shapes and
/// addresses already set for the call.
class EngineRunner {
 public:
  EngineRunner(bool use_cuda_graphs, std::size_t graph_cache_size) noexcept
      : use_graphs_(use_cuda_graphs), graphs_(graph_cache_size) {}
  EngineRunner(const EngineRunner&) = delete;             // owns graphs and streams
  EngineRunner& operator=(const EngineRunner&) = delete;

  /// Queues `engine`'s work for `plan`'s call, its bindings bound to `plan.bindings`' addresses: a
  /// plain enqueue, an enqueue with auxiliary streams handed over, the eager first sight of a
  /// graph signature, or a graph launch; returns which (EngineRun). An engine whose enqueue cannot
  /// be captured runs eagerly from then on, with one warning. No graph is destroyed here
  /// (Note [no graph destroyed in a call] in graph_cache.h).
  Result<EngineRun> run(engine::Engine& engine, const CallPlan& plan);
  /// Queues a repeated call's work on `stream` (Note [repeated calls]): `graph` launched again,
  /// or, without one, `engine` enqueued with the shapes and addresses it holds. Counted by
  /// count_launch once the call is covered.
  Result<EngineRun> repeat(engine::Engine& engine, cudaStream_t stream, cudaGraphExec_t graph);

  std::uint64_t graph_captures() const noexcept { return graph_captures_; }
  std::uint64_t graph_launches() const noexcept { return graph_launches_; }
  /// A repeated call launched its graph again (Note [repeated calls]).
  void count_launch() noexcept { ++graph_launches_; }

  /// Destroys the graphs (in-flight launches finish first) and the auxiliary streams.
  void reset() noexcept;

 private:
  /// The auxiliary streams for `green` handed to the engine; with graphs on, one more stream
  /// there (returned) to capture on.
  Result<cudaStream_t> hand_over_aux_streams(engine::Engine& engine, CUgreenCtx green);
  /// Captures `engine`'s enqueue for `entry`: a new executable graph, or its spare updated in
  /// place (entry.current), or, where the driver refuses the update, entry.eager. An error where
  /// the enqueue cannot be captured or instantiated.
  Status make_graph(engine::Engine& engine, cudaStream_t capture_stream, GraphCache::Entry& entry);

  bool use_graphs_;
  GraphCache graphs_;
  GraphKey key_;  ///< reused per call (no allocation once warm)
  AuxStreams aux_streams_;
  std::uint64_t graph_captures_ = 0;
  std::uint64_t graph_launches_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
