// The executor's capture steps: a call recorded into a capture of the caller's (refused where the
// contract refuses it, the capture left valid), and the replays of the graphs captured, each
// checked against the oracle; graphs released with their session.
#include <cuda_runtime_api.h>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <memory>
#include <string>

#include "contract_fuzz/executor.h"
#include "contract_fuzz/executor_steps.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/rng.h"

namespace trtet_test::fuzz {

Verdict Executor::capture_step(std::size_t index, const CaptureStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  const cudaStream_t stream = streams_->get(step.call.stream);
  const cudaStream_t io = world_.io(0);
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  if (step.warmup) {
    if (Verdict v = call(slot, args, CallHow{})) {
      v->message = "warm-up before the capture: " + v->message;
      return v;
    }
    const ex::Status refreshed = args->refresh(mix(step.call.data_seed, 1), io);
    if (!refreshed.ok()) return harness("refreshing arguments", refreshed);
  }
  std::unique_ptr<CallArgs> probe;
  // An empty probe binding would hold nothing pageable worth rejecting: no probe then.
  if (step.pageable_probe >= 0 && args->bytes(step.pageable_probe) > 0) {
    CallPlan plan = step.call;
    plan.mems[static_cast<std::size_t>(step.pageable_probe)] = Mem::kPageable;
    if (Verdict v = prepare(slot, plan, 0, probe)) return v;
  }
  const char* reason = "";
  Expect expect = expectation(slot, *args, /*capturing=*/true, &reason);
  // Without a warm-up the call may need to grow staging, which a capture forbids: either outcome,
  // but an error must leave the capture valid.
  if (expect == Expect::kSuccess && !step.warmup) expect = Expect::kEither;
  const char* probe_reason = "";
  const Expect probe_expect = probe ? expectation(slot, *probe, /*capturing=*/true, &probe_reason) : Expect::kEither;

  if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return Failure{Category::kStatus, std::string("synchronizing before the capture: ") + cudaGetErrorString(e)};
  }
  slot.sm_partition = kSmMixed;
  const Counters before = counters(slot);
  if (const cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); e != cudaSuccess) {
    return Failure{Category::kHarness, std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e)};
  }
  ex::Status status;
  ex::Status probe_status;
  {
    ex::CudaStreamGuard guard(stream);
    if (probe && step.probe_first) probe_status = slot.session->execute(probe->views(), probe->count());
    status = slot.session->execute(args->views(), args->count());
    if (probe && !step.probe_first) probe_status = slot.session->execute(probe->views(), probe->count());
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess || graph == nullptr) {
    (void)cudaGetLastError();
    return capture_failure(std::string("the capture did not end cleanly (cudaStreamEndCapture: ") +
                           cudaGetErrorString(ended) + "): a call inside it invalidated it; the call gave " +
                           status.to_string() + (probe ? "; the pageable probe gave " + probe_status.to_string() : ""));
  }
  auto graph_record = std::make_unique<GraphRecord>();
  graph_record->graph = graph;
  CallContext context;
  context.guard = true;
  context.stream = stream;
  context.io = io;
  context.failure_reason = reason;
  if (probe) {
    ++tally_.calls;
    if (probe_status.ok() && probe_expect == Expect::kFailure) {
      release_graph(*graph_record);
      return Failure{Category::kStatus, std::string("a call inside the capture succeeded where it must fail: ") +
                                            probe_reason};
    }
    // Refused for its profile's first use before its memory is looked at (Note [profiles used]).
    const int unused = unused_profile(slot, *probe);
    const std::string profile_named = "optimization profile " + std::to_string(unused);
    const bool for_pageable = slot.alive && slot.model.in_profile(probe->plan().shape);
    if (!probe_status.ok() && unused >= 0 && probe_status.message().find(profile_named) == std::string::npos) {
      release_graph(*graph_record);
      return Failure{Category::kStatus, "a call inside a capture whose " + profile_named + " the session had not used "
                                        "was rejected without naming it (a profile's first use is refused in a "
                                        "capture, before memory is looked at): " + probe_status.to_string()};
    }
    if (!probe_status.ok() && unused < 0 && for_pageable &&
        probe_status.message().find("pageable") == std::string::npos) {
      release_graph(*graph_record);
      return Failure{Category::kStatus, "a call with pageable memory during a capture was rejected without saying "
                                        "so (the message must name pageable memory): " + probe_status.to_string()};
    }
  }
  // Inside a capture nothing runs: the outputs stay poisoned until the graph is launched.
  ++tally_.calls;
  if (expect == Expect::kSuccess && !status.ok()) {
    release_graph(*graph_record);
    return Failure{Category::kStatus, "the call inside the capture failed where it must succeed (it was warmed up "
                                      "with the same arguments): " + status.to_string()};
  }
  if (expect == Expect::kFailure && status.ok()) {
    release_graph(*graph_record);
    return Failure{Category::kStatus, std::string("the call inside the capture succeeded where it must fail: ") + reason};
  }
  const std::uint64_t captured = status.ok() ? 1 : 0;
  if (Verdict v = check_counters(slot, before, captured, captured, "a capture")) {
    release_graph(*graph_record);
    return v;
  }
  if (status.ok() && slot.engine != nullptr) {
    // Recorded into the caller's capture: the engine was handed the capturing stream itself.
    if (Verdict v = check_engine_stream(slot, step.call, slot.engine->last_stream())) {
      release_graph(*graph_record);
      return v;
    }
  }
  if (!status.ok()) {
    std::size_t nodes = 0;
    const cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes);
    release_graph(*graph_record);
    if (e != cudaSuccess) return capture_failure(std::string("cudaGraphGetNodes: ") + cudaGetErrorString(e));
    if (nodes != 0 && !(probe && probe_status.ok())) {
      return capture_failure("rejected calls left " + std::to_string(nodes) + " nodes in the capture: " + status.to_string());
    }
    if (Verdict v = check_untouched(*args, io, tally_)) return v;
    return probe ? check_untouched(*probe, io, tally_) : std::nullopt;
  }
  if (const cudaError_t e = cudaGraphInstantiate(&graph_record->exec, graph, 0); e != cudaSuccess) {
    graph_record->exec = nullptr;
    release_graph(*graph_record);
    return capture_failure(std::string("cudaGraphInstantiate of the captured call: ") + cudaGetErrorString(e));
  }
  ++result_.graphs;
  graph_record->session = step.session;
  graph_record->generation = slot.generation;
  graph_record->stream = step.call.stream;
  graph_record->args = std::move(args);
  graphs_[index] = std::move(graph_record);
  for (int r = 0; r < step.replays; ++r) {
    if (Verdict v = replay_step(ReplayStep{index, mix(step.call.data_seed, 100 + static_cast<std::uint64_t>(r)), 1})) {
      return v;
    }
  }
  if (probe) return check_untouched(*probe, io, tally_);
  return std::nullopt;
}

Verdict Executor::replay_step(const ReplayStep& step) {
  std::unique_ptr<GraphRecord>& record = graphs_[step.capture_step];
  if (!record) return std::nullopt;  // never captured (the capture step was deleted or failed)
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(record->session)];
  // A graph keeps the staging it captured, also once later calls outgrew it (docs/DESIGN.md, "A
  // graph keeps what it uses"): replayed for as long as its session lives.
  if (!slot.alive || slot.generation != record->generation) {
    release_graph(*record);
    record.reset();
    ++result_.retired;
    return std::nullopt;
  }
  slot.sm_partition = kSmMixed;
  const cudaStream_t stream = streams_->get(record->stream);
  const cudaStream_t io = world_.io(0);
  const Counters before = counters(slot);
  for (int t = 0; t < step.times; ++t) {
    const ex::Status refreshed = record->args->refresh_data(mix(step.data_seed, static_cast<std::uint64_t>(t)), io);
    if (!refreshed.ok()) return harness("refreshing a graph's arguments", refreshed);
    if (const cudaError_t e = cudaGraphLaunch(record->exec, stream); e != cudaSuccess) {
      return capture_failure(std::string("cudaGraphLaunch: ") + cudaGetErrorString(e));
    }
    ++result_.replays;
    if (Verdict v = check_replay(*record->args, stream, io, tally_)) {
      v->message = "graph replay: " + v->message;
      return v;
    }
  }
  return check_counters(slot, before, 0, 0, "graph replays (they must not call the session or the engine)");
}

void Executor::retire_graphs_of(int session) {
  for (auto& graph : graphs_) {
    if (graph && graph->session == session) {
      release_graph(*graph);
      graph.reset();
      ++result_.retired;
    }
  }
}

void Executor::release_graph(GraphRecord& graph) {
  if (graph.exec != nullptr) (void)cudaGraphExecDestroy(graph.exec);
  if (graph.graph != nullptr) (void)cudaGraphDestroy(graph.graph);
  graph.exec = nullptr;
  graph.graph = nullptr;
}

}  // namespace trtet_test::fuzz
