#include "delegate/engine_runner.h"

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::delegate {

Result<cudaStream_t> EngineRunner::hand_over_aux_streams(engine::Engine& engine, CUgreenCtx green) {
  // Made on the stream's green context (or device), and handed over before every enqueue:
  // TensorRT applies setAuxStreams to the next enqueueV3 only.
  const int wanted = engine.aux_stream_count();
  const int extra = use_graphs_ ? 1 : 0;
  if (wanted + extra == 0) return cudaStream_t{nullptr};
  TRTET_ASSIGN_OR_RETURN(cudaStream_t* streams, aux_streams_.get(green, wanted + extra));
  if (wanted > 0) TRTET_RETURN_IF_ERROR(engine.set_aux_streams(streams, wanted));
  return extra > 0 ? streams[wanted] : nullptr;
}

Status EngineRunner::run(engine::Engine& engine, Call& call, const std::vector<Binding>& bindings) {
  const bool graphs = use_graphs_ && !call.capturing() && !engine.enqueue_is_synchronous();
  if (!graphs && engine.aux_stream_count() == 0) {
    call.enqueued_plainly = true;
    return engine.enqueue(call.stream());
  }
  CUgreenCtx green = call.where.facts.green_context;
  if (!call.where.green_known) {
    TRTET_ASSIGN_OR_RETURN(green, cuda::stream_green_context(call.stream()));
  }
  TRTET_ASSIGN_OR_RETURN(cudaStream_t capture_stream, hand_over_aux_streams(engine, green));
  if (!graphs) return engine.enqueue(call.stream());

  key_.profile = call.profile;
  key_.green = green;
  key_.dims.clear();
  key_.addresses.clear();
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const Binding& binding = bindings[i];
    key_.addresses.push_back(binding.address);
    if (!engine.io(static_cast<int>(i)).is_input) continue;
    key_.dims.push_back(binding.shape.rank);
    for (int d = 0; d < binding.shape.rank; ++d) key_.dims.push_back(binding.shape[d]);
  }
  GraphCache::Entry* entry = graphs_.find(key_);
  if (entry == nullptr) {
    // First sight: eager (TensorRT may do one-time work in a shape's first enqueue); captured next time.
    graphs_.insert(key_);
    return engine.enqueue(call.stream());
  }
  if (entry->eager) return engine.enqueue(call.stream());  // its entry's spare graph took no update
  if (!entry->current) {
    const Status made = make_graph(engine, capture_stream, *entry);
    if (!made.ok()) {
      // An engine that cannot be captured still runs: eagerly, from now on. Its graphs go with
      // the session (Note [no graph destroyed in a call]).
      log(LogLevel::kWarning, "CUDA graphs turned off for this engine, whose enqueue could not be captured: %s",
          made.to_string().c_str());
      use_graphs_ = false;
      return engine.enqueue(call.stream());
    }
    if (!entry->current) return engine.enqueue(call.stream());  // the update was refused: eager
    ++graph_captures_;
  }
  TRTET_CUDA_CHECK(cudaGraphLaunch(entry->exec, call.stream()));
  call.replayed = entry->exec;
  ++graph_launches_;
  return Status::Ok();
}

Status EngineRunner::make_graph(engine::Engine& engine, cudaStream_t capture_stream, GraphCache::Entry& entry) {
  // Captured on a private stream of the call's green context (thread-local mode: other threads'
  // CUDA calls are not affected); nothing runs while capturing.
  TRTET_CUDA_CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal));
  const Status enqueued = engine.enqueue(capture_stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_stream, &graph);
  if (!enqueued.ok() || ended != cudaSuccess) {
    if (graph != nullptr) TRTET_CUDA_WARN(cudaGraphDestroy(graph));
    (void)cudaGetLastError();
    TRTET_RETURN_IF_ERROR(enqueued);
    return cuda::runtime_status(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  if (entry.exec != nullptr) {
    // A spare: updated in place (Note [no graph destroyed in a call]).
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t updated = cudaGraphExecUpdate(entry.exec, graph, &info);
    TRTET_CUDA_WARN(cudaGraphDestroy(graph));
    if (updated == cudaSuccess) {
      entry.current = true;
      return Status::Ok();
    }
    (void)cudaGetLastError();
    if (updated != cudaErrorGraphExecUpdateFailure) {
      return cuda::runtime_status(updated, "cudaGraphExecUpdate", __FILE__, __LINE__);
    }
    log(LogLevel::kDebug, "a cached CUDA graph could not take another signature's graph (update result %d): "
        "that signature runs eagerly", static_cast<int>(info.result));
    entry.eager = true;
    return Status::Ok();
  }
  const cudaError_t instantiated = cudaGraphInstantiate(&entry.exec, graph, 0);
  TRTET_CUDA_WARN(cudaGraphDestroy(graph));
  if (instantiated != cudaSuccess) {
    entry.exec = nullptr;
    (void)cudaGetLastError();
    return cuda::runtime_status(instantiated, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  entry.current = true;
  return Status::Ok();
}

void EngineRunner::reset() noexcept {
  graphs_.clear();  // in-flight launches finish first
  aux_streams_.reset();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
