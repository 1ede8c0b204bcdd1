// The executor of the session leg: sessions and streams set up, the steps run in order, and the
// call, repeat, destroy, recreate and bad-call steps checked against the oracle (the capture and
// replay steps: executor_capture.cpp; the concurrent steps: executor_concurrent.cpp).
#include "contract_fuzz/executor.h"

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "contract_fuzz/executor_steps.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/rng.h"
#include "cuda/driver.h"

namespace trtet_test::fuzz {

std::atomic<long> g_current_step{-1};
std::atomic<long long> g_step_started_ns{0};

Failure harness(const std::string& what, const ex::Status& status) {
  return Failure{Category::kHarness, what + ": " + status.to_string()};
}

Failure capture_failure(const std::string& message) { return Failure{Category::kCapture, message}; }

ex::Status execute(ex::delegate::Session& session, ex::delegate::TensorView* views, std::size_t count, bool guard,
                   cudaStream_t stream) {
  if (!guard) return session.execute(views, count);
  ex::CudaStreamGuard selection(stream);
  return session.execute(views, count);
}

namespace {

/// The input an output updates in place is missing or in host memory (refused with the arguments).
bool in_place_input_off_device(const CallArgs& args) {
  for (int b = 0; b < args.model().io_count(); ++b) {
    const TensorState& t = args.tensor(b);
    if (args.model().role(b).updated_in_place && (t.buffer == nullptr || is_host(t.buffer->mem()))) return true;
  }
  return false;
}

/// Makes partition 0's green context current on this thread for the scope.
class GreenCurrent {
 public:
  explicit GreenCurrent(const ex::green::DriverGreenContext& context) {
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
  release_held();
  if (streams_) (void)streams_->synchronize_all();
  for (Pending& p : pending_) (void)cudaEventSynchronize(p.done);
  pending_.clear();
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

ex::delegate::SessionOptions session_options(const EngineSpec& spec) {
  ex::delegate::SessionOptions options;
  options.use_cuda_graphs = spec.graphs;
  options.staging_budget_bytes = spec.budget_bytes;
  options.staging_slots = spec.staging_slots;
  return options;
}

Verdict Executor::make_session(SessionSlot& slot) {
  const EngineSpec& spec = slot.model.spec();
  auto engine = slot.model.make(0);
  if (!engine.ok()) return harness("making engine " + to_string(spec), engine.status());
  slot.engine = dynamic_cast<TestEngine*>(engine->get());
  slot.session = std::make_unique<ex::delegate::Session>(std::move(engine).value(), session_options(spec));
  const ex::Status initialized = slot.session->initialize();
  if (!initialized.ok()) {
    return Failure{Category::kStatus, "Session::initialize for " + to_string(spec) + ": " + initialized.to_string()};
  }
  const std::uint64_t budgeted = slot.session->stats().budgeted_staging_bytes;
  if (budgeted != slot.model.budgeted_bytes(spec.budget_bytes)) {
    return Failure{Category::kCounters, "initialize made " + std::to_string(budgeted) + " bytes of staging within the "
                                        "budget of " + std::to_string(spec.budget_bytes) + ", expected " +
                                        std::to_string(slot.model.budgeted_bytes(spec.budget_bytes)) +
                                        " (each binding not written in place, in order, twice its largest size while "
                                        "that fits)"};
  }
  slot.alive = true;
  ++slot.generation;
  slot.own_stream = nullptr;
  slot.sm_partition = kSmClean;
  slot.profile_used.assign(static_cast<std::size_t>(spec.profiles), false);
  slot.profile_used[0] = true;  // selected when the engine was made
  if (spec.in_place()) {
    auto cache = SharedCache::make(spec.cache_shape, spec.cache_mem,
                                   mix(sequence_.config.seed, 0xcac4e + static_cast<std::uint64_t>(slot.generation)),
                                   world_.io(0));
    if (!cache.ok()) return harness("making the shared cache", cache.status());
    slot.cache = std::move(cache).value();
    slot.cache->negate = slot.model.negates_cache();
  }
  return std::nullopt;
}

RunResult Executor::run(const std::vector<std::size_t>& keep) {
  result_ = RunResult{};
  if (Verdict v = setup()) {
    result_.failure = v;
    return result_;
  }
  // No synchronization between steps: every check waits only for what its promise names, and the
  // guarded device-only calls of a step are checked once the next step has queued its own calls.
  for (std::size_t index : keep) {
    g_step_started_ns.store(std::chrono::steady_clock::now().time_since_epoch().count());
    g_current_step.store(static_cast<long>(index));
    const Step& current = sequence_.steps[index];
    // Only a call may be made while the last deferred call's gate is held (call() decides).
    if (!std::holds_alternative<CallStep>(current) && !std::holds_alternative<RepeatStep>(current)) release_held();
    Verdict v = step(index, current);
    // The calls of earlier steps, now that this one queued its own (a failure there may need both).
    if (!v) v = resolve_pending(index);
    pool_.release_all(buffers_in_use());
    if (v) {
      result_.failure = v;
      result_.step = index;
      break;
    }
  }
  if (!result_.failure && !keep.empty()) {
    if (Verdict v = resolve_pending(SIZE_MAX)) {
      result_.failure = v;
      result_.step = keep.back();
    }
  }
  release_held();
  g_current_step.store(-1);
  return result_;
}

Verdict Executor::step(std::size_t index, const Step& step) {
  return std::visit(Overloaded{
                        [&](const CallStep& s) { return call_step(index, s); },
                        [&](const CaptureStep& s) { return capture_step(index, s); },
                        [&](const ReplayStep& s) { return replay_step(s); },
                        [&](const ConcurrentStep& s) { return concurrent_step(s); },
                        [&](const DestroyStep& s) { return destroy_step(s); },
                        [&](const RecreateSessionStep& s) { return recreate_session_step(s); },
                        [&](const RecreateStreamStep& s) { return recreate_stream_step(s); },
                        [&](const BadCallStep& s) { return bad_call_step(s); },
                        [&](const RepeatStep& s) { return repeat_step(index, s); },
                    },
                    step);
}

Verdict Executor::prepare(const SessionSlot& slot, const CallPlan& plan, int thread, std::unique_ptr<CallArgs>& out) {
  auto args = CallArgs::prepare(slot.model, plan, pool_, world_.io(thread), slot.cache.get());
  if (!args.ok()) return harness("preparing arguments", args.status());
  out = std::move(args).value();
  return std::nullopt;
}

// Note [profiles used]
// The session picks a call's optimization profile with the argument checks and selects it after
// classifying where in-place inputs live, before it binds outputs and refuses pageable memory in a
// capture (Session::execute_steps: check_arguments, classify_arguments, select_profile, then
// resolve_shapes, where bind_output and decide_completion refuse pageable memory). A profile's
// first use may allocate, so it is refused inside a capture (docs/DESIGN.md, "Optimization
// profiles"). A capture whose profile the session has not used is therefore refused for that,
// whatever memory it has: the message names the profile, not pageable memory. The fuzzer keeps
// which profiles each session has used: profile 0 from the start, and a call's profile once the
// call succeeded outside a capture. That is exactly "the call selected it": every eager call the
// fuzzer expects to fail is refused before selection (a destroyed session, shapes outside every
// profile, an in-place input off the device), every other one must succeed, and a capture adds
// none (its profile was used, or it was refused). A session destroyed while calls race it is made
// afresh, with only profile 0 used.
int Executor::unused_profile(const SessionSlot& slot, const CallArgs& args) const {
  if (!slot.alive) return -1;
  const int profile = args.model().profile_for(args.plan().shape);
  if (profile < 0 || slot.profile_used[static_cast<std::size_t>(profile)]) return -1;
  return in_place_input_off_device(args) ? -1 : profile;
}

void Executor::note_profile_used(SessionSlot& slot, const CallArgs& args) {
  const int profile = args.model().profile_for(args.plan().shape);
  if (slot.alive && profile >= 0) slot.profile_used[static_cast<std::size_t>(profile)] = true;
}

Expect Executor::expectation(const SessionSlot& slot, const CallArgs& args, bool capturing, const char** reason) const {
  if (!slot.alive) {
    *reason = "the session was destroyed";
    return Expect::kFailure;
  }
  if (!args.model().in_profile(args.plan().shape)) {
    *reason = "the input shape is outside every optimization profile of the engine";
    return Expect::kFailure;
  }
  if (in_place_input_off_device(args)) {
    *reason = "the input updated in place is not in device memory";
    return Expect::kFailure;
  }
  if (capturing && unused_profile(slot, args) >= 0) {
    *reason = "the call needs an optimization profile the session has not used, whose first use is refused inside "
              "a capture";
    return Expect::kFailure;
  }
  Expect expect = Expect::kSuccess;
  for (int b = 0; b < args.model().io_count(); ++b) {
    const TensorState& t = args.tensor(b);
    if (capturing && args.model().role(b).aliased_input < 0 && t.buffer != nullptr && t.buffer->mem() == Mem::kPageable) {
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
  const ex::delegate::SessionStats stats = slot.session->stats();
  c.calls = stats.calls;
  c.graph_captures = stats.graph_captures;
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
  // With delegate graphs a call may launch a graph instead (no enqueue), or capture one (one more).
  const std::uint64_t enqueued = after.enqueues - before.enqueues;
  const std::uint64_t captured = after.graph_captures - before.graph_captures;
  const bool ok = slot.model.spec().graphs ? enqueued <= enqueues + captured : enqueued == enqueues;
  if (!ok) {
    return Failure{Category::kCounters, std::string(what) + ": the engine was enqueued " + std::to_string(enqueued) +
                                            " times, expected " + (slot.model.spec().graphs ? "at most " : "") +
                                            std::to_string(enqueues) +
                                            (enqueues == 0 ? " (a rejected call enqueues nothing)" : "")};
  }
  return std::nullopt;
}

Verdict Executor::call_step(std::size_t index, const CallStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  CallHow how;
  how.may_defer = true;
  how.step = index;
  return call(slot, args, how);
}

Verdict Executor::repeat_step(std::size_t index, const RepeatStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  std::unique_ptr<CallArgs> args;
  if (Verdict v = prepare(slot, step.call, 0, args)) return v;
  const char* reason = "";
  const bool succeeds = expectation(slot, *args, /*capturing=*/false, &reason) == Expect::kSuccess;
  const std::uint64_t launches = slot.alive ? slot.session->stats().graph_launches : 0;
  for (int r = 0; r < step.times; ++r) {
    CallHow how;
    how.step = index;
    how.may_defer = r + 1 == step.times;  // the last one overlaps the next step
    if (r > 0) {
      // Same tensors, same stream: new values queued on the stream the call is ordered after.
      const ex::Status requeued = args->requeue(mix(step.call.data_seed, 200 + static_cast<std::uint64_t>(r)),
                                                ordered_stream(step.call), world_.io(0));
      if (!requeued.ok()) return harness("queueing a repeat's inputs", requeued);
      how.work_queued = true;
    }
    if (Verdict v = call(slot, args, how)) {
      v->message = "repeat " + std::to_string(r) + " of " + std::to_string(step.times) + ": " + v->message;
      return v;
    }
    if (!args) break;  // deferred (the last)
  }
  if (succeeds && slot.model.spec().graphs && slot.session->stats().graph_launches == launches) {
    // The second call of a signature captures it and launches the graph (Note [delegate graphs]); a
    // capture that fails turns graphs off for good, with a warning only.
    return Failure{Category::kCounters, "delegate graphs are on, and " + std::to_string(step.times) +
                                            " calls with the same arguments on one stream launched no graph"};
  }
  return std::nullopt;
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
    const ex::Status queued = args->queue_caller_work(ordered_stream(step.call));
    if (!queued.ok()) return harness("queueing the caller's work", queued);
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
  // Every later call fails cleanly, with new arguments (the call before destroy may have updated
  // its aliased input in place), its stream idle before and right after it.
  CallPlan after = step.call;
  after.guard = false;
  after.caller_spin_us = 0;
  auto again = CallArgs::prepare(slot.model, after, pool_, world_.io(0), nullptr);
  if (!again.ok()) return harness("preparing arguments", again.status());
  std::unique_ptr<CallArgs> late = std::move(again).value();
  return call(slot, late, CallHow{});  // expected to fail: the stream idle right after it
}

Verdict Executor::recreate_session_step(const RecreateSessionStep& step) {
  // The pending checks may read the shared cache the new session replaces.
  if (Verdict v = resolve_pending(SIZE_MAX)) return v;
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
  context.guard = step.call.guard && step.kind != BadCallStep::Kind::kGreenCurrentNoGuard;
  context.stream = streams_->get(step.call.stream);
  context.io = world_.io(0);
  const cudaStream_t ordered = context.guard ? ordered_stream(step.call) : cudaStreamPerThread;
  if (const cudaError_t e = cudaStreamSynchronize(ordered); e != cudaSuccess) {
    return Failure{Category::kStatus, std::string("synchronizing before a bad call: ") + cudaGetErrorString(e)};
  }
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
    case BadCallStep::Kind::kWrongDtype: {
      context.failure_reason = "an argument of another dtype than the engine's";
      ex::DataType& dtype = views[step.call.data_seed % views.size()].dtype;
      dtype = dtype == ex::DataType::kInt32 ? ex::DataType::kFloat32 : ex::DataType::kInt32;
      break;
    }
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
  if (!status.ok()) {
    // Before anything synchronizes it: a rejected call enqueued nothing.
    const cudaError_t query = cudaStreamQuery(ordered);
    ++tally_.idle_after_reject;
    if (query != cudaSuccess) {
      return Failure{Category::kPromise, std::string("a rejected call (") + to_string(step.kind) +
                                             ") left work on its stream, idle before the call: cudaStreamQuery "
                                             "right after it gave " + cudaGetErrorName(query)};
    }
  }
  if (Verdict v = check_call(*args, status, Expect::kFailure, context, tally_)) return v;
  if (slot.alive && step.kind == BadCallStep::Kind::kGreenCurrentNoGuard &&
      status.message().find("CudaStreamGuard") == std::string::npos) {
    return Failure{Category::kStatus, "with a green context current and no guard, the error must tell the caller to "
                                      "scope a CudaStreamGuard; it says: " + status.to_string()};
  }
  return check_counters(slot, before, 0, 0, std::string("a rejected call (").append(to_string(step.kind)).append(")").c_str());
}

}  // namespace trtet_test::fuzz
