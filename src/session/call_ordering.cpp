#include "session/call_ordering.h"

#include <atomic>

#include "cuda/check.h"
#include "staging/staging.h"

namespace torch_tensorrt::executorch_backend::delegate {

namespace {

/// Makes `event` (on the current device) where it has not been made yet. The join and the slots'
/// events are made by the first call that needs them, not at initialize: a session whose I/O is on
/// the device under a guard never uses them, and each costs a driver call at load. An
/// event is never made inside a capture: the callers return before this while capturing.
Status ensure_made(cuda::Event& event) {
  if (event) return Status::Ok();
  TRTET_ASSIGN_OR_RETURN(event, cuda::Event::create());
  return Status::Ok();
}

}  // namespace

Status CallOrdering::initialize(int slots) {
  slots_.clear();
  slots_.resize(static_cast<std::size_t>(slots));
  TRTET_ASSIGN_OR_RETURN(cuda::Event completion, cuda::Event::create());
  completion_ = std::make_shared<cuda::Event>(std::move(completion));
  return Status::Ok();
}

void CallOrdering::reset() noexcept {
  join_in_.reset();
  slots_.clear();
  call_events_.clear();  // a caller still waiting on one keeps it
  completion_.reset();   // a graph that holds it keeps it
  completion_pending_ = false;
  engine_pending_ = false;
  engine_slot_ = -1;
}

void CallOrdering::wait_for_all() noexcept {
  // Our own work only (and replays launched before now: they record completion_ too).
  if (completion_ != nullptr && (completion_pending_ || captured_)) TRTET_CUDA_WARN(cudaEventSynchronize(completion_->get()));
}

Status CallOrdering::join_caller(const CallPlan& plan) {
  if (!plan.where.joined()) return Status::Ok();
  TRTET_RETURN_IF_ERROR(ensure_made(join_in_));
  TRTET_RETURN_IF_ERROR(join_in_.record(plan.where.choice.caller));
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(plan.stream(), join_in_.get(), 0));
  return Status::Ok();
}

Result<SharedEvent> CallOrdering::call_event() {
  // A count of 1 is final: references are only taken under the session's lock.
  for (const SharedEvent& event : call_events_) {
    if (event.use_count() == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);  // after the last waiter let go
      return event;
    }
  }
  TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
  call_events_.push_back(std::make_shared<cuda::Event>(std::move(event)));
  return call_events_.back();
}

// Note [ordering replays]: every eager call records completion_ after its work; a call recorded
// into a capture waits on completion_ and records it again through external event nodes, so each
// replay of the graph is ordered after the eager calls launched before it (the node waits on the
// record that is latest when the replay runs, not on the one at capture time: the wait is captured
// even where completion_ has no record yet), and eager calls after a replay wait for it like for
// any earlier call. Once a graph may replay, eager calls always wait.
//
// Note [pipelined calls]
// ----------------------
// A call with host I/O returns only once its host outputs are written (or its host inputs read),
// so one thread's calls cannot overlap. Several threads, each on a stream of its own, can: call
// i+1's host-to-device copies may run under call i's engine, and call i's device-to-host copies
// under call i+1's engine. Each wait is as narrow as the hazard it guards against:
//
//  - The wait for the call's own completion happens after the session's lock is released
//    (Session::execute), on an event of the call's own (call_event(), a pool), shared with the
//    waiting thread, so a reset cannot free it under the thread; the thread touches nothing of the
//    session after the lock. Calls with pageable memory wait under the lock: their data goes
//    through the session's host staging, which the next such call's host-side memcpy reuses and
//    which nothing on the GPU orders (and the chunked copy works on the session's copy lists).
//  - A call on another stream waits on the GPU only for what its steps reuse (order() decides
//    the waits, CallOrder lists them). The engine waits for the previous engine (one execution
//    context cannot run two enqueues at once, and an engine may read what the previous one wrote,
//    an in-place update say): the engine_done event of that call's slot, or completion_ where it
//    staged nothing (nothing of it follows the engine then; the join below may make that wait a
//    little longer than needed, never shorter). Staging comes in slots
//    (SessionOptions::staging_slots; StagingStore): a call that stages on another stream than the
//    last call that staged takes the next slot, and one on the same stream keeps that call's slot,
//    which the stream already orders (so a session used from one stream holds one slot's staging,
//    which a staging budget makes at initialize; the next slot grows when calls first come from two
//    streams). The host-to-device copies into a slot wait for the engine of the slot's last user
//    (which read that input staging), and the engine waits for the last user's device-to-host
//    copies (which read the output staging it will write). With two slots, call i+1's copies in
//    wait only for call i-1's engine, which is done before call i's engine starts, and call i+1's
//    engine only for call i-1's copies out, which ran under call i's engine: the bound is the
//    longest of copy in, engine and copy out. A third slot gives each of those waits a call's slack.
//  - completion_ covers every earlier call: destroy, captures and the whole-call waits below wait
//    on it alone. So before an eager call records it on a stream other than the previous call's,
//    that stream waits on completion_ as it was (join_earlier_calls): a join on the GPU, at the end
//    of the call, which delays nothing of the call itself, only the record and the caller's later
//    work on that stream (which follows every earlier call). The call's own event, which its
//    caller waits on, is recorded before the join.
//
// Calls on the stream of the previous call need no wait at all: that stream already follows every
// earlier call (the join). The whole-call wait stays where pipelining would need more bookkeeping
// than it is worth: a capture waits on completion_ (Note [ordering replays]), and once a graph may
// replay (captured_) every eager call does, because a replay, launched on any stream, records only
// completion_; and a call that frees outgrown staging (CallPlan::frees_staging) waits for every
// earlier call first, since any of them may have used it. Calls with no guard run on the session's
// own stream and so stay in order among themselves.
Result<CallOrder> CallOrdering::order(const CallPlan& plan) {
  TRTET_RETURN_IF_ERROR(join_caller(plan));
  CallOrder order;
  order.graphs_may_replay = captured_;
  if (plan.capturing()) {
    // Always, also where nothing is pending now: the wait node orders each replay after the eager
    // calls queued before that replay, which a capture that is the session's first call cannot see.
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(plan.stream(), completion_->get(), cudaEventWaitExternal));
    order.after_all = true;
    return order;
  }
  const bool same_stream = plan.where.id.same_as(last_stream_);
  if (!captured_ && (!completion_pending_ || same_stream)) {
    order.after_all = true;  // nothing earlier, or all of it is ahead on this stream
    return order;
  }
  if (captured_ || plan.frees_staging) {
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(plan.stream(), completion_->get(), 0));
    order.after_all = true;
    order.cross_stream = !same_stream;
    ++whole_call_waits_;
    return order;
  }
  decide_pipelined(plan, order);  // pipelined: the copies in and the engine wait for what they reuse
  return order;
}

void CallOrdering::decide_pipelined(const CallPlan& plan, CallOrder& order) const {
  const Slot* slot = plan.slot >= 0 ? &slots_[static_cast<std::size_t>(plan.slot)] : nullptr;
  if (slot != nullptr && plan.staged_inputs && slot->engine_recorded && !slot->engine_stream.same_as(plan.where.id)) {
    order.before_copies = slot->engine_done.get();
    order.cross_stream = true;
  }
  if (engine_pending_ && !engine_stream_.same_as(plan.where.id)) {
    order.before_engine =
        engine_slot_ >= 0 ? slots_[static_cast<std::size_t>(engine_slot_)].engine_done.get() : completion_->get();
    order.cross_stream = true;
  }
  if (slot != nullptr && plan.staged_outputs && slot->copies_recorded && !slot->copies_stream.same_as(plan.where.id)) {
    order.before_engine_copies = slot->copies_done.get();
    order.cross_stream = true;
  }
}

// Note [the call schedule] in call_schedule.h: begin makes the waits that come before any of the
// call's work; the schedule's phases make the rest, each at its place.
Result<CallSchedule::CopyIn> CallOrdering::begin(const CallPlan& plan, cuda::Event* done, StagingStore& staging) {
  CallSchedule schedule(*this, &staging, plan, done, /*repeat=*/false);  // dropped on an error: covered
  TRTET_ASSIGN_OR_RETURN(schedule.order_, order(plan));
  if (schedule.order_.cross_stream) ++cross_stream_waits_;
  staging.free_retired(schedule.order_.after_all);  // outgrown staging: freed in order after every earlier use
  return CallSchedule::CopyIn(std::move(schedule));
}

CallSchedule::Repeat CallOrdering::begin_repeat(const CallPlan& plan) noexcept {
  return CallSchedule::Repeat(CallSchedule(*this, /*staging=*/nullptr, plan, /*done=*/nullptr, /*repeat=*/true));
}

Status CallOrdering::wait_before_copies(const CallOrder& order, cudaStream_t stream) const {
  if (order.before_copies != nullptr) TRTET_CUDA_CHECK(cudaStreamWaitEvent(stream, order.before_copies, 0));
  return Status::Ok();
}

Status CallOrdering::wait_before_engine(const CallOrder& order, cudaStream_t stream) const {
  if (order.before_engine != nullptr) TRTET_CUDA_CHECK(cudaStreamWaitEvent(stream, order.before_engine, 0));
  if (order.before_engine_copies != nullptr) {
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(stream, order.before_engine_copies, 0));
  }
  return Status::Ok();
}

Status CallOrdering::engine_done(const CallPlan& plan) {
  // Inside a capture nothing runs now: later eager calls wait on completion_ instead (captured_).
  if (plan.capturing()) return Status::Ok();
  if (plan.slot >= 0) {
    Slot& slot = slots_[static_cast<std::size_t>(plan.slot)];
    TRTET_RETURN_IF_ERROR(ensure_made(slot.engine_done));
    TRTET_RETURN_IF_ERROR(slot.engine_done.record(plan.stream()));
    slot.engine_recorded = true;
    slot.engine_stream = plan.where.id;
  }
  engine_slot_ = plan.slot;  // -1: completion_, recorded at the end of this call, marks it
  engine_pending_ = true;
  engine_stream_ = plan.where.id;
  return Status::Ok();
}

Status CallOrdering::copies_done(const CallPlan& plan) {
  if (plan.capturing() || plan.slot < 0 || !plan.staged_outputs) return Status::Ok();
  Slot& slot = slots_[static_cast<std::size_t>(plan.slot)];
  TRTET_RETURN_IF_ERROR(ensure_made(slot.copies_done));
  TRTET_RETURN_IF_ERROR(slot.copies_done.record(plan.stream()));
  slot.copies_recorded = true;
  slot.copies_stream = plan.where.id;
  return Status::Ok();
}

Status CallOrdering::join_earlier_calls(const CallPlan& plan, const CallOrder& order) {
  if (order.after_all || !completion_pending_ || plan.where.id.same_as(last_stream_)) return Status::Ok();
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(plan.stream(), completion_->get(), 0));
  return Status::Ok();
}

// Note [a record that failed]
// ----------------------------
// Destroy and every later call know what is in flight only through the events an eager call
// records after its work (completion_, and the slot's engine and copies events). When one of those
// records fails (cudaEventRecord is CUDA's to fail: out of resources, a sticky error), the call's
// work is queued but no event follows it, and completion_'s last record is older than that work:
// destroy would free the staging (and ExecuTorch the arena) while the engine still reads and
// writes them, and the next call on another stream would overlap the engine. So the failing call
// waits for its own stream before it returns the error: whatever it queued is then done, and
// every event as it stands covers every call that returned. This is the one synchronization on the
// execute path, and only on a failure of CUDA itself; a capture records nothing that runs now, so
// it waits for nothing (its capture is invalidated by the failed record anyway).
void CallOrdering::settle(cudaStream_t stream) noexcept {
  TRTET_CUDA_WARN(cudaStreamSynchronize(stream));
  (void)cudaGetLastError();  // the record's own error is the call's; a sticky one stays
}

Status CallOrdering::record_completion(const CallPlan& plan, const CallOrder& order, bool failed) {
  // Whatever was queued, completion_ covers it, so later calls and destroy wait for it.
  Status recorded;
  if (plan.capturing()) {
    const cudaError_t error = cudaEventRecordWithFlags(completion_->get(), plan.stream(), cudaEventRecordExternal);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaEventRecordWithFlags", __FILE__, __LINE__);
  } else {
    // A call that failed part-way: the engine and slot events, too, cover what it queued.
    if (failed) recorded = engine_done(plan);
    if (failed && recorded.ok()) recorded = copies_done(plan);
    if (recorded.ok()) recorded = join_earlier_calls(plan, order);
    if (recorded.ok()) recorded = completion_->record(plan.stream());
    if (recorded.ok()) {
      completion_pending_ = true;
      last_stream_ = plan.where.id;
    } else {
      settle(plan.stream());
    }
  }
  if (plan.where.joined() && recorded.ok()) {
    // The caller's stream continues after this call: once completion_ fires, nothing of it is left.
    const cudaError_t error = cudaStreamWaitEvent(plan.where.choice.caller, completion_->get(), 0);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaStreamWaitEvent", __FILE__, __LINE__);
  }
  return recorded;
}

void CallOrdering::record_failed(const CallPlan& plan, const CallOrder& order, bool repeat) noexcept {
  if (repeat) {
    (void)record_repeat(plan.stream());
  } else {
    (void)record_completion(plan, order, /*failed=*/true);
  }
}

Status CallOrdering::record_repeat(cudaStream_t stream) {
  const cudaError_t error = cudaEventRecord(completion_->get(), stream);
  if (error != cudaSuccess) {
    settle(stream);  // Note [a record that failed]
    return cuda::runtime_status(error, "cudaEventRecord", __FILE__, __LINE__);
  }
  completion_pending_ = true;
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
