#include "session/engine_runner.h"

#include <vector>

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

Result<EngineRun> EngineRunner::repeat(engine::Engine& engine, cudaStream_t stream, cudaGraphExec_t graph) {
  if (graph == nullptr) {
    TRTET_RETURN_IF_ERROR(engine.enqueue(stream));
    return EngineRun{nullptr, /*plain=*/true};
  }
  TRTET_CUDA_CHECK(cudaGraphLaunch(graph, stream));
  return EngineRun{graph, /*plain=*/false};
}

Result<EngineRun> EngineRunner::run(engine::Engine& engine, const CallPlan& plan) {
  const std::vector<Binding>& bindings = plan.bindings;
  EngineRun eager;  // enqueued eagerly: plainly, or with auxiliary streams, or at a signature's first sight
  const bool graphs = use_graphs_ && !plan.capturing() && !engine.enqueue_is_synchronous();
  if (!graphs && engine.aux_stream_count() == 0) {
    TRTET_RETURN_IF_ERROR(engine.enqueue(plan.stream()));
    return EngineRun{nullptr, /*plain=*/true};
  }
  CUgreenCtx green = plan.where.facts.green_context;
  if (!plan.where.green_known) {
    TRTET_ASSIGN_OR_RETURN(green, cuda::stream_green_context(plan.stream()));
  }
  TRTET_ASSIGN_OR_RETURN(cudaStream_t capture_stream, hand_over_aux_streams(engine, green));
  auto enqueue_eagerly = [&]() -> Result<EngineRun> {
    TRTET_RETURN_IF_ERROR(engine.enqueue(plan.stream()));
    return eager;
  };
  if (!graphs) return enqueue_eagerly();

  key_.profile = plan.profile;
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
    return enqueue_eagerly();
  }
  if (entry->eager) return enqueue_eagerly();  // its entry's spare graph took no update
  if (!entry->current) {
    const Status made = make_graph(engine, capture_stream, *entry);
    if (!made.ok()) {
      // An engine that cannot be captured still runs: eagerly, from now on. Its graphs go with
      // the session (Note [no graph destroyed in a call]). The failed call's error is no longer
      // this thread's last: an engine that checks cudaGetLastError after its launches (TensorRT
      // does) would take it for its own.
      (void)cudaGetLastError();
      log(LogLevel::kWarning, "CUDA graphs turned off for this engine, whose enqueue could not be captured: %s",
          made.to_string().c_str());
      use_graphs_ = false;
      return enqueue_eagerly();
    }
    if (!entry->current) return enqueue_eagerly();  // the update was refused: eager
    ++graph_captures_;
  }
  TRTET_CUDA_CHECK(cudaGraphLaunch(entry->exec, plan.stream()));
  ++graph_launches_;
  return EngineRun{entry->exec, /*plain=*/false};
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
