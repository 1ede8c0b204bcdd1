#include "contract_fuzz/executor.h"

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/rng.h"
#include "cuda/driver.h"

namespace trtet_test::fuzz {

std::atomic<long> g_current_step{-1};
std::atomic<long long> g_step_started_ns{0};

namespace {

Failure harness(const std::string& what, const ex::Status& status) {
  return Failure{Category::kHarness, what + ": " + status.to_string()};
}

Failure capture_failure(const std::string& message) { return Failure{Category::kCapture, message}; }

/// execute() under a CudaStreamGuard on `stream` when `guard`, else with no selection.
ex::Status execute(ex::delegate::Session& session, ex::delegate::TensorView* views, std::size_t count, bool guard,
                   cudaStream_t stream) {
  if (!guard) return session.execute(views, count);
  ex::CudaStreamGuard selection(stream);
  return session.execute(views, count);
}

/// Makes partition 0's green context current on this thread for the scope.
class GreenCurrent {
 public:
  explicit GreenCurrent(const ex::green::GreenContext& context) {
    auto api = ex::cuda::driver();
    auto ctx = context.as_context();
    if (!api.ok() || !ctx.ok()) {
      status_ = api.ok() ? ctx.status() : api.status();
      return;
    }
    api_ = *api;
    if (api_->cuCtxGetCurrent(&previous_) != CUDA_SUCCESS || api_->cuCtxSetCurrent(*ctx) != CUDA_SUCCESS) {
      status_ = ex::make_error(ex::ErrorCode::kInternal, "cuCtxSetCurrent(green context) failed");
      api_ = nullptr;
    }
  }
  ~GreenCurrent() {
    if (api_ != nullptr) api_->cuCtxSetCurrent(previous_);
  }
  GreenCurrent(const GreenCurrent&) = delete;             // one restore per scope
  GreenCurrent& operator=(const GreenCurrent&) = delete;
  const ex::Status& status() const noexcept { return status_; }

 private:
  const ex::cuda::DriverApi* api_ = nullptr;
  CUcontext previous_ = nullptr;
  ex::Status status_;
};

}  // namespace

Executor::Executor(const Sequence& sequence, Tally& tally)
    : sequence_(sequence), tally_(tally), world_(GpuWorld::get()) {}

Executor::~Executor() {
  // Everything the sequence started is complete before anything is freed.
  if (streams_) (void)streams_->synchronize_all();
  for (auto& graph : graphs_) {
    if (graph) release_graph(*graph);
  }
  graphs_.clear();
  for (auto& slot : sessions_) {
    if (slot->session) slot->session->destroy();
  }
  sessions_.clear();
  streams_.reset();
}

Verdict Executor::setup() {
  if (!world_.status().ok()) return harness("GPU setup (green-context split, I/O streams)", world_.status());
  if (sequence_.config.green && !world_.has_green()) {
    return Failure{Category::kHarness, kGreenDrawnWhereNone};
  }
  streams_ = std::make_unique<StreamSlots>(world_);
  const ex::Status made = streams_->create();
  if (!made.ok()) return harness("making the sequence's streams", made);
  for (const EngineSpec& spec : sequence_.sessions) {
    sessions_.push_back(std::make_unique<SessionSlot>(spec));
    if (Verdict v = make_session(*sessions_.back())) return v;
  }
  graphs_.resize(sequence_.steps.size());
  return std::nullopt;
}

Verdict Executor::make_session(SessionSlot& slot) {
  auto engine = slot.model.make(0);
  if (!engine.ok()) return harness("making engine " + to_string(slot.model.spec()), engine.status());
  slot.engine = dynamic_cast<TestEngine*>(engine->get());
  slot.session = std::make_unique<ex::delegate::Session>(std::move(engine).value());
  const ex::Status initialized = slot.session->initialize();
  if (!initialized.ok()) {
    return Failure{Category::kStatus, "Session::initialize for " + to_string(slot.model.spec()) + ": " +
                                          initialized.to_string()};
  }
  slot.alive = true;
  ++slot.generation;
  slot.staged.assign(static_cast<std::size_t>(slot.model.io_count()), 0);
  return std::nullopt;
}

RunResult Executor::run(const std::vector<std::size_t>& keep) {
  result_ = RunResult{};
  if (Verdict v = setup()) {
    result_.failure = v;
    return result_;
  }
  for (std::size_t index : keep) {
    g_step_started_ns.store(std::chrono::steady_clock::now().time_since_epoch().count());
    g_current_step.store(static_cast<long>(index));
    Verdict v = step(index, sequence_.steps[index]);
    pool_.release_all();
    if (!v) {
      const ex::Status synced = streams_->synchronize_all();
      if (!synced.ok()) v = Failure{Category::kStatus, "synchronizing after the step: " + synced.to_string()};
    }
    if (v) {
      result_.failure = v;
      result_.step = index;
      break;
    }
  }
  g_current_step.store(-1);
  return result_;
}

Verdict Executor::step(std::size_t index, const Step& step) {
  return std::visit(Overloaded{
                        [&](const CallStep& s) { return call_step(s); },
                        [&](const CaptureStep& s) { return capture_step(index, s); },
                        [&](const ReplayStep& s) { return replay_step(s); },
                        [&](const ConcurrentStep& s) { return concurrent_step(s); },
                        [&](const DestroyStep& s) { return destroy_step(s); },
                        [&](const RecreateSessionStep& s) { return recreate_session_step(s); },
                        [&](const RecreateStreamStep& s) { return recreate_stream_step(s); },
                        [&](const BadCallStep& s) { return bad_call_step(s); },
                    },
                    step);
}

Verdict Executor::prepare(const SessionSlot& slot, const CallPlan& plan, int thread, std::unique_ptr<CallArgs>& out) {
  auto args = CallArgs::prepare(slot.model, plan, pool_, world_.io(thread));
  if (!args.ok()) return harness("preparing arguments", args.status());
  out = std::move(args).value();
  return std::nullopt;
}

Expect Executor::expectation(const SessionSlot& slot, const CallArgs& args, bool capturing, const char** reason) const {
  if (!slot.alive) {
    *reason = "the session was destroyed";
    return Expect::kFailure;
  }
  if (!args.plan().shape.in_profile()) {
    *reason = "the input shape is outside the engine's profile";
    return Expect::kFailure;
  }
  Expect expect = Expect::kSuccess;
  for (int b = 0; b < args.model().io_count(); ++b) {
    const BindingRole& role = args.model().role(b);
    const TensorState& t = args.tensor(b);
    if (role.updated_in_place && (t.buffer == nullptr || is_host(t.buffer->mem()))) {
      *reason = "the input updated in place is not in device memory";
      return Expect::kFailure;
    }
    if (capturing && role.aliased_input < 0 && t.buffer != nullptr && t.buffer->mem() == Mem::kPageable) {
      if (args.bytes(b) > 0) {
        *reason = "pageable host memory is used while the stream is being captured";
        return Expect::kFailure;
      }
      expect = Expect::kEither;  // an empty pageable tensor: nothing would be copied
    }
  }
  *reason = "";
  return expect;
}

Executor::Counters Executor::counters(const SessionSlot& slot) const {
  Counters c;
  if (!slot.alive) return c;
  c.calls = slot.session->stats().calls;
  c.enqueues = slot.engine != nullptr ? slot.engine->enqueue_count() : 0;
  return c;
}

Verdict Executor::check_counters(const SessionSlot& slot, const Counters& before, std::uint64_t successes,
                                 std::uint64_t enqueues, const char* what) const {
  if (!slot.alive) return std::nullopt;
  const Counters after = counters(slot);
  if (after.calls != before.calls + successes) {
    return Failure{Category::kCounters, std::string(what) + ": stats().calls went from " + std::to_string(before.calls) +
                                            " to " + std::to_string(after.calls) + ", expected +" +
                                            std::to_string(successes) + " (one per successful execute)"};
  }
  if (after.enqueues != before.enqueues + enqueues) {
    return Failure{Category::kCounters, std::string(what) + ": the engine was enqueued " +
                                            std::to_string(after.enqueues - before.enqueues) + " times, expected " +
                                            std::to_string(enqueues) + (enqueues == 0 ? " (a rejected call enqueues nothing)" : "")};
  }
  return std::nullopt;
}

void Executor::note_staging(SessionSlot& slot, const CallArgs& args) {
  for (int b = 0; b < args.model().io_count(); ++b) {
    if (args.model().role(b).aliased_input >= 0 || !args.host_binding(b)) continue;
    std::size_t& staged = slot.staged[static_cast<std::size_t>(b)];
    staged = std::max(staged, args.bytes(b));
  }
}

Verdict Executor::call(SessionSlot& slot, CallArgs& args, int thread) {
  const CallPlan& plan = args.plan();
  const char* reason = "";
  const Expect expect = expectation(slot, args, /*capturing=*/false, &reason);
  CallContext context;
  context.guard = plan.guard;
  context.stream = streams_->get(plan.stream);
  context.io = world_.io(thread);
  context.scribble = plan.scribble;
  context.failure_reason = reason;
  const Counters before = counters(slot);
  const ex::Status status = execute(*slot.session, args.views(), args.count(), plan.guard, context.stream);
  if (Verdict v = check_call(args, status, expect, context, tally_)) return v;
  if (status.ok()) note_staging(slot, args);
  return check_counters(slot, before, status.ok() ? 1 : 0, status.ok() ? 1 : 0, "a call");
}

Verdict Executor::call_step(const CallStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  return call(slot, *args, 0);
}

Verdict Executor::capture_step(std::size_t index, const CaptureStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  const cudaStream_t stream = streams_->get(step.call.stream);
  const cudaStream_t io = world_.io(0);
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  if (step.warmup) {
    if (Verdict v = call(slot, *args, 0)) {
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
    const bool for_pageable = slot.alive && probe->plan().shape.in_profile();
    if (!probe_status.ok() && for_pageable && probe_status.message().find("pageable") == std::string::npos) {
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
  graph_record->staged = slot.staged;
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
  const SessionSlot& slot = *sessions_[static_cast<std::size_t>(record->session)];
  bool grown = false;
  for (int b = 0; b < record->args->model().io_count(); ++b) {
    // A pinned binding's graph copies through the session's staging: once a later call needed more,
    // the staging it captured may be gone.
    if (record->args->host_binding(b) && slot.staged[static_cast<std::size_t>(b)] > record->staged[static_cast<std::size_t>(b)]) {
      grown = true;
    }
  }
  if (!slot.alive || slot.generation != record->generation || grown) {
    release_graph(*record);
    record.reset();
    ++result_.retired;
    return std::nullopt;
  }
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

Verdict Executor::concurrent_step(const ConcurrentStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  const int threads = static_cast<int>(step.threads.size());
  std::vector<std::vector<std::unique_ptr<CallArgs>>> args(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    for (const CallPlan& plan : step.threads[static_cast<std::size_t>(t)]) {
      std::unique_ptr<CallArgs> a;
      if (Verdict v = prepare(slot, plan, 1 + t, a)) return v;
      args[static_cast<std::size_t>(t)].push_back(std::move(a));
    }
  }
  const Counters before = counters(slot);
  std::atomic<bool> destroyed{false};
  std::atomic<std::uint64_t> successes{0};
  std::mutex mutex;
  std::condition_variable go;
  bool started = false;
  Verdict first;
  auto worker = [&](int t) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      go.wait(lock, [&] { return started; });
    }
    for (auto& a : args[static_cast<std::size_t>(t)]) {
      const bool after_destroy = destroyed.load();
      const CallPlan& plan = a->plan();
      const char* reason = "";
      Expect expect = expectation(slot, *a, false, &reason);
      if (after_destroy) {
        expect = Expect::kFailure;
        reason = "the session was destroyed before the call began";
      } else if (step.destroy_during && expect == Expect::kSuccess) {
        expect = Expect::kEither;  // the destroy may win the race
      }
      CallContext context;
      context.guard = plan.guard;
      context.stream = streams_->get(plan.stream);
      context.io = world_.io(1 + t);
      context.scribble = plan.scribble;
      context.failure_reason = reason;
      const ex::Status status = execute(*slot.session, a->views(), a->count(), plan.guard, context.stream);
      if (status.ok()) ++successes;
      Verdict v = check_call(*a, status, expect, context, tally_);
      if (v) {
        v->message = "thread " + std::to_string(t) + ": " + v->message;
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = v;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  {
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
  }
  go.notify_all();
  if (step.destroy_during) {
    std::this_thread::sleep_for(std::chrono::microseconds(step.destroy_delay_us));
    slot.session->destroy();
    destroyed.store(true);
  }
  for (std::thread& t : pool) t.join();
  if (step.destroy_during) {
    slot.alive = false;
    slot.engine = nullptr;
    retire_graphs_of(step.session);
  } else if (!first) {
    for (auto& per_thread : args) {
      for (auto& a : per_thread) note_staging(slot, *a);  // conservative: as if every call staged
    }
    first = check_counters(slot, before, successes.load(), successes.load(), "concurrent calls");
  }
  return first;
}

Verdict Executor::destroy_step(const DestroyStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  if (step.in_flight) {
    // The call returns (at once, for device memory under a guard); destroy must wait for its work.
    const char* reason = "";
    const Expect expect = expectation(slot, *args, false, &reason);
    CallContext context;
    context.guard = step.call.guard;
    context.stream = streams_->get(step.call.stream);
    context.io = world_.io(0);
    context.failure_reason = reason;
    const ex::Status status = execute(*slot.session, args->views(), args->count(), step.call.guard, context.stream);
    slot.session->destroy();
    if (Verdict v = check_call(*args, status, expect, context, tally_)) {
      v->message = "a call made just before destroy: " + v->message;
      return v;
    }
  } else {
    slot.session->destroy();
  }
  slot.alive = false;
  slot.engine = nullptr;
  retire_graphs_of(step.session);
  // Every later call fails cleanly. Inputs are written anew first: the call before destroy may have
  // updated an aliased input in place.
  const ex::Status rewritten = args->refresh(mix(step.call.data_seed, 1), world_.io(0));
  if (!rewritten.ok()) return harness("rewriting inputs", rewritten);
  const ex::Status repoisoned = args->repoison(world_.io(0));
  if (!repoisoned.ok()) return harness("re-poisoning outputs", repoisoned);
  CallContext context;
  context.guard = false;
  context.io = world_.io(0);
  context.failure_reason = "the session was destroyed";
  const ex::Status status = slot.session->execute(args->views(), args->count());
  return check_call(*args, status, Expect::kFailure, context, tally_);
}

Verdict Executor::recreate_session_step(const RecreateSessionStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  slot.session->destroy();
  slot.session.reset();
  slot.alive = false;
  slot.engine = nullptr;
  retire_graphs_of(step.session);
  return make_session(slot);
}

Verdict Executor::recreate_stream_step(const RecreateStreamStep& step) {
  const ex::Status status = streams_->recreate(step.stream, step.non_blocking);
  if (!status.ok()) return harness("recreating stream " + to_string(step.stream), status);
  return std::nullopt;
}

Verdict Executor::bad_call_step(const BadCallStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  CallContext context;
  context.guard = step.call.guard;
  context.stream = streams_->get(step.call.stream);
  context.io = world_.io(0);
  const Counters before = counters(slot);
  std::vector<ex::delegate::TensorView> views(args->views(), args->views() + args->count());
  std::size_t count = views.size();
  ex::Status status;
  switch (step.kind) {
    case BadCallStep::Kind::kTooFewArgs:
      context.failure_reason = "one argument too few";
      count -= 1;
      break;
    case BadCallStep::Kind::kTooManyArgs:
      context.failure_reason = "one argument too many";
      views.push_back(views.back());
      count += 1;
      break;
    case BadCallStep::Kind::kWrongDtype:
      context.failure_reason = "an argument of dtype int32 where the engine has float32";
      views[step.call.data_seed % views.size()].dtype = ex::DataType::kInt32;
      break;
    case BadCallStep::Kind::kGreenCurrentNoGuard:
      context.failure_reason = "a green context is current and no CudaStreamGuard selects a stream";
      context.guard = false;
      break;
  }
  if (step.kind == BadCallStep::Kind::kGreenCurrentNoGuard) {
    GreenCurrent current(world_.partition(0).context);
    if (!current.status().ok()) return harness("making a green context current", current.status());
    status = slot.session->execute(views.data(), count);
  } else {
    status = execute(*slot.session, views.data(), count, context.guard, context.stream);
  }
  if (Verdict v = check_call(*args, status, Expect::kFailure, context, tally_)) return v;
  if (slot.alive && step.kind == BadCallStep::Kind::kGreenCurrentNoGuard &&
      status.message().find("CudaStreamGuard") == std::string::npos) {
    return Failure{Category::kStatus, "with a green context current and no guard, the error must tell the caller to "
                                      "scope a CudaStreamGuard; it says: " + status.to_string()};
  }
  return check_counters(slot, before, 0, 0, std::string("a rejected call (").append(to_string(step.kind)).append(")").c_str());
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
