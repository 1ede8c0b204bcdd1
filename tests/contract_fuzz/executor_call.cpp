// Executor::call and the promise checks it makes (Note [promises when made] in executor.h); the
// pending checks of guarded device-only calls.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <string>
#include <utility>

#include "contract_fuzz/executor.h"
#include "engines/cuda_test_engine.h"

namespace trtet_test::fuzz {
namespace {

Failure promise(std::string message) { return Failure{Category::kPromise, std::move(message)}; }

/// The green partition a guarded call on `plan.stream` runs on (-1: not a green-context stream).
int green_partition(const CallPlan& plan) {
  if (!plan.guard || plan.stream.source != StreamSource::kGreen) return -1;
  return plan.stream.slot < 2 ? 0 : 1;
}

ex::Status execute_as(ex::delegate::Session& session, CallArgs& args, bool guard, cudaStream_t stream) {
  if (!guard) return session.execute(args.views(), args.count());
  ex::CudaStreamGuard selection(stream);
  return session.execute(args.views(), args.count());
}

}  // namespace

Executor::Pending::Pending(Pending&& other) noexcept
    : slot(other.slot),
      generation(other.generation),
      cache_updates(other.cache_updates),
      args(std::move(other.args)),
      done(std::exchange(other.done, nullptr)),
      step(other.step) {}

Executor::Pending& Executor::Pending::operator=(Pending&& other) noexcept {
  if (this != &other) {
    if (done != nullptr) (void)cudaEventDestroy(done);
    slot = other.slot;
    generation = other.generation;
    cache_updates = other.cache_updates;
    args = std::move(other.args);
    done = std::exchange(other.done, nullptr);
    step = other.step;
  }
  return *this;
}

Executor::Pending::~Pending() {
  if (done != nullptr) (void)cudaEventDestroy(done);
}

cudaStream_t Executor::ordered_stream(const CallPlan& plan) const {
  if (!plan.guard) return cudaStreamPerThread;
  const cudaStream_t stream = streams_->get(plan.stream);
  return stream != nullptr ? stream : cudaStreamLegacy;
}

Verdict Executor::check_engine_stream(SessionSlot& slot, const CallPlan& plan, cudaStream_t handed) {
  ++tally_.stream_checks;
  if (plan.guard && plan.stream.capturable()) {
    const cudaStream_t promised = streams_->get(plan.stream);
    if (handed == promised) return std::nullopt;
    return promise("the engine was enqueued on stream " + std::to_string(reinterpret_cast<std::uintptr_t>(handed)) +
                   ", not on the guard's stream " + std::to_string(reinterpret_cast<std::uintptr_t>(promised)) + " (" +
                   to_string(plan.stream) + ")");
  }
  // No guard, or a default-stream handle: the session's own stream (docs/DESIGN.md, "The engine
  // never gets a default-stream handle").
  const char* what = plan.guard ? "a guard on a default-stream handle" : "no guard";
  if (handed == nullptr || handed == cudaStreamLegacy || handed == cudaStreamPerThread) {
    return promise(std::string("with ") + what + ", the engine was handed a default-stream handle (" +
                   std::to_string(reinterpret_cast<std::uintptr_t>(handed)) + "), not the session's own stream");
  }
  for (int s = 0; s < kCreatedSlots; ++s) {
    for (StreamSource source : {StreamSource::kCreated, StreamSource::kGreen}) {
      if (streams_->get(StreamRef{source, s}) == handed) {
        return promise(std::string("with ") + what + ", the engine ran on the caller's stream " +
                       to_string(StreamRef{source, s}) + ", not on the session's own stream");
      }
    }
  }
  if (slot.own_stream == nullptr) {
    slot.own_stream = handed;
  } else if (slot.own_stream != handed) {
    return promise(std::string("with ") + what + ", the engine ran on another stream than the session's own one of "
                   "earlier calls (" + std::to_string(reinterpret_cast<std::uintptr_t>(handed)) + " after " +
                   std::to_string(reinterpret_cast<std::uintptr_t>(slot.own_stream)) + ")");
  }
  return std::nullopt;
}

Verdict Executor::prepare_sm_check(SessionSlot& slot, int partition) {
  if (slot.sm_partition == partition || slot.sm_partition == kSmClean) {
    slot.sm_partition = partition;
    return std::nullopt;
  }
  // The engine recorded SMs of other streams: let all of it end (a targeted full sync, only here),
  // then forget them.
  const ex::Status synced = streams_->synchronize_all();
  if (!synced.ok()) return Failure{Category::kStatus, "synchronizing before an SM check: " + synced.to_string()};
  auto* engine = dynamic_cast<CudaTestEngine*>(slot.engine);
  if (engine == nullptr) return Failure{Category::kHarness, "an SM-recording engine that is not a CudaTestEngine"};
  const ex::Status cleared = engine->clear_recorded_sms();
  if (!cleared.ok()) return Failure{Category::kHarness, "clearing the recorded SMs: " + cleared.to_string()};
  slot.sm_partition = partition;
  return std::nullopt;
}

Verdict Executor::check_sms(SessionSlot& slot, int partition) {
  auto* engine = dynamic_cast<CudaTestEngine*>(slot.engine);
  if (engine == nullptr) return Failure{Category::kHarness, "an SM-recording engine that is not a CudaTestEngine"};
  auto sms = engine->recorded_sms();
  if (!sms.ok()) return Failure{Category::kHarness, "reading the recorded SMs: " + sms.status().to_string()};
  ++tally_.sm_checks;
  const std::vector<int>& allowed = world_.partition_sms(partition);
  if (sms->empty()) return promise("an engine recording SMs recorded none after a call on a green-context stream");
  for (int sm : *sms) {
    if (!std::binary_search(allowed.begin(), allowed.end(), sm)) {
      return promise("a kernel of the engine ran on SM " + std::to_string(sm) + ", outside green partition " +
                     std::to_string(partition) + " (" + std::to_string(allowed.size()) + " SMs) of the call's stream");
    }
  }
  return std::nullopt;
}

Verdict Executor::check_shared_cache(const SessionSlot& slot, const char* when) {
  const SharedCache& cache = *slot.cache;
  std::vector<float> now(cache.expected.size());
  const ex::Status read = cache.buffer->read(now.data(), 0, now.size() * sizeof(float), world_.io(0));
  if (!read.ok()) return Failure{Category::kHarness, "reading the shared cache: " + read.to_string()};
  ++tally_.tensors;
  tally_.bytes += now.size() * sizeof(float);
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (now[i] != cache.expected[i]) {
      return Failure{Category::kOutputs, std::string("the shared cache (") + to_string(cache.buffer->mem()) + ", " +
                                             std::to_string(now.size()) + " floats, " + std::to_string(cache.updates) +
                                             " updates) holds " + std::to_string(now[i]) + " at element " +
                                             std::to_string(i) + ", expected " + std::to_string(cache.expected[i]) +
                                             " [checked " + when + "]"};
    }
  }
  return std::nullopt;
}

Verdict Executor::call(SessionSlot& slot, std::unique_ptr<CallArgs>& owned, const CallHow& how) {
  CallArgs& args = *owned;
  const CallPlan& plan = args.plan();
  const char* reason = "";
  const Expect expect = expectation(slot, args, /*capturing=*/false, &reason);
  const cudaStream_t stream = streams_->get(plan.stream);
  const cudaStream_t ordered = ordered_stream(plan);
  const cudaStream_t io = world_.io(0);

  const int partition = green_partition(plan);
  const bool sm_check = slot.alive && slot.model.spec().record_sms && partition >= 0 && expect == Expect::kSuccess;
  // Returns at once and is checked later: its gate may stay closed until the next call.
  const bool holdable = slot.alive && plan.guard && expect == Expect::kSuccess && args.device_only() && how.may_defer &&
                        !sm_check;
  const bool behind_held = holdable && held_.ticket.valid() && held_.slot == &slot &&
                           held_.generation == slot.generation && held_.stream != ordered;
  if (!behind_held) release_held();  // this call (or its checks) may wait for the held one
  if (sm_check) {
    if (Verdict v = prepare_sm_check(slot, partition)) return v;
  } else if (expect != Expect::kFailure && (partition < 0 || partition != slot.sm_partition)) {
    slot.sm_partition = kSmMixed;  // kernels elsewhere: cleared before the next SM check
  }
  if (expect == Expect::kFailure) {
    // Nothing else queued: the stream must be as idle right after the call.
    if (const cudaError_t e = cudaStreamSynchronize(ordered); e != cudaSuccess) {
      return Failure{Category::kStatus, "synchronizing before a call that must fail: " + error_name(e)};
    }
  }
  if (!how.work_queued) {
    const ex::Status queued = args.queue_caller_work(ordered);
    if (!queued.ok()) return Failure{Category::kHarness, "queueing the caller's work: " + queued.to_string()};
  }
  const bool idle_before = cudaStreamQuery(ordered) == cudaSuccess;
  const bool gated = plan.guard && expect == Expect::kSuccess && args.device_only();
  Gate::Ticket gate;
  if (gated) {
    auto closed = world_.gate().close(ordered);
    if (!closed.ok()) return Failure{Category::kHarness, "closing the gate: " + closed.status().to_string()};
    gate = *closed;
  }
  const Counters before = counters(slot);
  const ex::Status status = execute_as(*slot.session, args, plan.guard, stream);
  if (status.ok()) note_profile_used(slot, args);
  if (gated) {
    const cudaError_t query = cudaStreamQuery(ordered);
    // The gate lets the stream through on its own after its timeout (counted on the GPU from later
    // than closed_at): a call that took nearly that long cannot be judged.
    const bool in_time = std::chrono::steady_clock::now() <
                         gate.closed_at + std::chrono::milliseconds(world_.gate().timeout_ms() - 200);
    const bool hold = holdable && status.ok() && !behind_held;
    if (!hold) world_.gate().open(gate);
    if (status.ok() && in_time) {
      ++tally_.busy_at_return;
      if (query != cudaErrorNotReady) {
        world_.gate().open(gate);
        return promise("a guarded call with device-only I/O waited for its stream: right after it returned, "
                       "cudaStreamQuery gave " + error_name(query) + " though a gate held the stream (it opens after " +
                       std::to_string(world_.gate().timeout_ms()) + " ms unless the caller opens it)");
      }
    } else if (status.ok() && query != cudaErrorNotReady) {
      world_.gate().open(gate);
      return promise("a guarded call with device-only I/O returned only after its stream's gate timed out (" +
                     std::to_string(world_.gate().timeout_ms()) + " ms): it waited for its stream");
    }
    if (behind_held && status.ok()) {
      if (Verdict v = check_behind_held(ordered)) return v;
    }
    release_held();
    if (hold) held_ = Held{gate, ordered, &slot, slot.generation};
  }
  if (!status.ok() && idle_before && expect != Expect::kSuccess) {
    const cudaError_t query = cudaStreamQuery(ordered);
    ++tally_.idle_after_reject;
    if (query != cudaSuccess) {
      return promise("a rejected call left work on its stream, idle before the call: cudaStreamQuery right after "
                     "it gave " + error_name(query) + " (the call failed with " + status.to_string() + ")");
    }
  }
  if (status.ok() && slot.engine != nullptr) {
    const Counters after = counters(slot);
    if (after.enqueues == before.enqueues + 1 && after.graph_captures == before.graph_captures) {
      if (Verdict v = check_engine_stream(slot, plan, slot.engine->last_stream())) return v;
    }
  }
  CallContext context;
  context.guard = plan.guard;
  context.stream = stream;
  context.io = io;
  context.scribble = plan.scribble;
  context.failure_reason = reason;
  // Device-side results of a guarded call without host outputs (it returned at once, or once its
  // host inputs were read) are checked later, after the next step's calls were queued.
  context.defer_device = how.may_defer && status.ok() && plan.guard && !args.host_outputs() && !sm_check;
  if (Verdict v = check_call(args, status, expect, context, tally_)) return v;
  if (status.ok() && plan.shared_cache) {
    slot.cache->apply(args.inputs()[static_cast<std::size_t>(slot.model.x_binding())]);
  }
  if (status.ok() && sm_check) {
    if (Verdict v = check_sms(slot, partition)) return v;
  }
  if (Verdict v = check_counters(slot, before, status.ok() ? 1 : 0, status.ok() ? 1 : 0, "a call")) return v;
  if (!context.defer_device) return std::nullopt;
  Pending pending;
  pending.slot = &slot;
  pending.generation = slot.generation;
  pending.cache_updates = plan.shared_cache ? slot.cache->updates : 0;
  pending.step = how.step;
  if (const cudaError_t e = cudaEventCreateWithFlags(&pending.done, cudaEventDisableTiming); e != cudaSuccess) {
    return Failure{Category::kHarness, "cudaEventCreate: " + error_name(e)};
  }
  if (const cudaError_t e = cudaEventRecord(pending.done, ordered); e != cudaSuccess) {
    return Failure{Category::kHarness, "cudaEventRecord after the call: " + error_name(e)};
  }
  pending.args = std::move(owned);
  pending_.push_back(std::move(pending));
  ++tally_.deferred;
  return std::nullopt;
}

void Executor::release_held() noexcept {
  if (held_.ticket.valid()) world_.gate().open(held_.ticket);
  held_ = Held{};
}

Verdict Executor::check_behind_held(cudaStream_t ordered) {
  // The held gate lets its call through on its own only after its timeout (counted on the GPU
  // from later than closed_at): what completes well before that did not wait for it.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point valid_until =
      held_.ticket.closed_at + std::chrono::milliseconds(world_.gate().timeout_ms() - 200);
  if (Clock::now() + std::chrono::milliseconds(kBehindGateMs) >= valid_until) return std::nullopt;  // too late to tell
  cudaEvent_t after = nullptr;
  if (const cudaError_t e = cudaEventCreateWithFlags(&after, cudaEventDisableTiming); e != cudaSuccess) {
    return Failure{Category::kHarness, "cudaEventCreate: " + error_name(e)};
  }
  Verdict verdict;
  if (const cudaError_t e = cudaEventRecord(after, ordered); e != cudaSuccess) {
    verdict = Failure{Category::kHarness, "cudaEventRecord after the call: " + error_name(e)};
  }
  const Clock::time_point until = Clock::now() + std::chrono::milliseconds(kBehindGateMs);
  while (!verdict && Clock::now() < until) {
    const cudaError_t query = cudaEventQuery(after);
    if (query == cudaErrorNotReady) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    if (query != cudaSuccess) {
      verdict = Failure{Category::kStatus, "cudaEventQuery after the call: " + error_name(query)};
    } else if (Clock::now() < valid_until) {
      verdict = promise("a call on another stream completed while the session's previous call, which a gate held, "
                        "had not run: it did not wait for the earlier call (docs/DESIGN.md, \"Ordering between calls\")");
    }
    break;
  }
  ++tally_.behind_gate;
  (void)cudaEventDestroy(after);
  return verdict;
}

Verdict Executor::resolve_pending(std::size_t before) {
  if (before == SIZE_MAX) release_held();
  Verdict first;
  // Latest first: its event alone must show every earlier call's effect on the shared cache.
  for (std::size_t i = pending_.size(); i-- > 0;) {
    Pending& p = pending_[i];
    if (p.step >= before) continue;
    if (!first) {
      if (const cudaError_t e = cudaEventSynchronize(p.done); e != cudaSuccess) {
        first = Failure{Category::kStatus, "waiting for a call's event: " + error_name(e)};
      } else {
        const bool latest = !p.args->plan().shared_cache ||
                            (p.slot->generation == p.generation && p.slot->cache->updates == p.cache_updates);
        first = check_device_results(*p.args, world_.io(0), tally_, latest,
                                     "through an event recorded on the guard's stream right after the call, once "
                                     "later calls were queued (no synchronization in between)");
        if (first) first->message = "(a call of step " + std::to_string(p.step) + ") " + first->message;
      }
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return first;
}

// Note [buffers in use]
// After each step the pool lends every buffer again but those still in use: a pending call's
// (its check has not read them yet; the call may still be in flight) and a live graph's. A graph
// holds the addresses it captured: every replay writes new inputs there from the host
// (refresh_data), poisons its outputs and runs the captured kernels on them. Lent to a later call
// meanwhile, such a buffer would be rewritten under that call by the replay, which no contract
// orders the call against (the soak's late-checked failures of seeds 5723170679020815903,
// 4204049634323805431, 1830942898573476094, 4581569510697142803, 1766355874267772439: a call's
// output, aliased input or caller-work source lent from the graph of an earlier capture, then
// that graph replayed before the call's check).
std::vector<const Buffer*> Executor::buffers_in_use() const {
  std::vector<const Buffer*> buffers;
  auto add = [&buffers](const CallArgs& args) {
    const std::vector<const Buffer*> used = args.buffers();
    buffers.insert(buffers.end(), used.begin(), used.end());
  };
  for (const Pending& p : pending_) add(*p.args);
  for (const auto& graph : graphs_) {
    if (graph && graph->args) add(*graph->args);  // live until retired (reset)
  }
  return buffers;
}

}  // namespace trtet_test::fuzz
