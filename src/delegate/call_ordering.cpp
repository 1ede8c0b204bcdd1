#include "delegate/call_ordering.h"

#include <atomic>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::delegate {

namespace {

/// Makes `event` (on the current device) where it has not been made yet. The join and the slots'
/// events are made by the first call that needs them, not at initialize: a session whose I/O is on
/// the device under a guard never uses them, and each costs a driver call at load (issue 38). An
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

Status CallOrdering::join_caller(const Call& call) {
  if (!call.where.joined()) return Status::Ok();
#ifdef TRTET_PLANT_NO_GUARD_NOT_JOINED
  return Status::Ok();  // planted bug (docs/TESTING.md): the own stream does not wait for the caller's
#endif
  TRTET_RETURN_IF_ERROR(ensure_made(join_in_));
  TRTET_RETURN_IF_ERROR(join_in_.record(call.where.choice.caller));
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), join_in_.get(), 0));
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
// replay of the graph is ordered after the eager calls launched before it, and eager calls after
// a replay wait for it like for any earlier call. Once a graph may replay, eager calls always wait.
//
// Note [pipelined calls]
// ----------------------
// A call with host I/O returns only once its host outputs are written (or its host inputs read),
// so one thread's calls cannot overlap. Several threads, each on a stream of its own, can: call
// i+1's host-to-device copies may run under call i's engine, and call i's device-to-host copies
// under call i+1's engine. Three things stood in the way, and each is now as narrow as the hazard
// it guards against:
//
//  - The wait for the call's own completion happened under the session's lock, so the next thread
//    could not even queue its call. Now it happens after the lock is released (Session::execute),
//    on an event of the call's own (call_event(), a pool), shared with the waiting thread, so a
//    reset cannot free it under the thread; the thread touches nothing of the session after the
//    lock. Calls with pageable memory still wait under the lock: their data goes through the
//    session's host staging, which the next such call's host-side memcpy reuses and which nothing
//    on the GPU orders (and HostTransfers works on the session's chunk lists).
//  - A call on another stream waited on the GPU for the whole previous call, its device-to-host
//    copies included. Now its steps wait only for what they reuse. The engine waits for the
//    previous engine (one execution context cannot run two enqueues at once, and an engine may read
//    what the previous one wrote, an in-place update say): the engine_done event of that call's
//    slot, or completion_ where it staged nothing (nothing of it follows the engine then; the join
//    below may make that wait a little longer than needed, never shorter). Staging comes in slots
//    (SessionOptions::staging_slots; StagingStore): a call that stages on another stream than the
//    last call that staged takes the next slot, and one on the same stream keeps that call's slot,
//    which the stream already orders (so a session used from one stream holds one slot's staging,
//    which a staging budget makes at initialize; the next slot grows when calls first come from two
//    streams). The host-to-device copies into a slot wait for the engine of the slot's last user
//    (which read that input staging), and the engine waits for the last user's device-to-host
//    copies (which read the output staging it will write). Even with two slots, call i+1's copies
//    in only wait for call i-1's engine, which is done before call i's engine starts, and call
//    i+1's engine only for call i-1's copies out, which ran under call i's engine: the bound is the
//    longest of copy in, engine and copy out. A third slot gives each of those waits a call's slack.
//  - completion_ must still cover every earlier call: destroy, captures and the whole-call waits
//    below wait on it alone. So before an eager call records it on a stream other than the previous
//    call's, that stream waits on completion_ as it was (join_earlier_calls): a join on the GPU, at
//    the end of the call, which delays nothing of the call itself, only the record and the
//    caller's later work on that stream (which follows every earlier call, as it did before). The
//    call's own event, which its caller waits on, is recorded before the join.
//
// Calls on the stream of the previous call need no wait at all: that stream already follows every
// earlier call (the join). The whole-call ordering of before is kept where pipelining would need
// more bookkeeping than it is worth: a capture waits on completion_ (Note [ordering replays]), and
// once a graph may replay (captured_) every eager call does, because a replay, launched on any
// stream, records only completion_; and a call that frees outgrown staging waits for every
// earlier call first, since any of them may have used it. Calls with no guard run on the
// session's own stream and so stay in order among themselves.
Status CallOrdering::order_after_previous_calls(Call& call, bool freeing) {
  if (call.capturing()) {
    if (completion_pending_ || captured_) {
      TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), completion_->get(), cudaEventWaitExternal));
    }
    call.after_all = true;
    return Status::Ok();
  }
  const bool same_stream = call.where.id.same_as(last_stream_);
  if (!captured_ && (!completion_pending_ || same_stream)) {
    call.after_all = true;  // nothing earlier, or all of it is ahead on this stream
    return Status::Ok();
  }
  if (captured_ || freeing) {
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), completion_->get(), 0));
    call.after_all = true;
    call.cross_stream = !same_stream;
    ++whole_call_waits_;
  }
  return Status::Ok();  // else pipelined: order_staging_writes and order_engine wait for what they reuse
}

Status CallOrdering::order_staging_writes(Call& call) {
  if (call.after_all || call.slot < 0 || !call.staged_inputs) return Status::Ok();
  const Slot& slot = slots_[static_cast<std::size_t>(call.slot)];
  if (!slot.engine_recorded || slot.engine_stream.same_as(call.where.id)) return Status::Ok();
#ifndef TRTET_PLANT_STAGING_SLOT_REUSED_EARLY  // planted bug: copies into the slot before its last engine ends
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), slot.engine_done.get(), 0));
#endif
  call.cross_stream = true;
  return Status::Ok();
}

Status CallOrdering::order_engine(Call& call) {
  if (call.after_all) return Status::Ok();
  if (engine_pending_ && !engine_stream_.same_as(call.where.id)) {
    const cudaEvent_t engine_done =
        engine_slot_ >= 0 ? slots_[static_cast<std::size_t>(engine_slot_)].engine_done.get() : completion_->get();
#ifndef TRTET_PLANT_MISSING_CROSS_STREAM_WAIT  // planted bug: counted, but not waited for
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), engine_done, 0));
#else
    (void)engine_done;
#endif
    call.cross_stream = true;
  }
  if (call.slot < 0 || !call.staged_outputs) return Status::Ok();
  const Slot& slot = slots_[static_cast<std::size_t>(call.slot)];
  if (!slot.copies_recorded || slot.copies_stream.same_as(call.where.id)) return Status::Ok();
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), slot.copies_done.get(), 0));
  call.cross_stream = true;
  return Status::Ok();
}

Status CallOrdering::record_progress(Call& call, bool engine_done, bool copies_done) {
  // Inside a capture nothing runs now: later eager calls wait on completion_ instead (captured_).
  if (call.capturing()) return Status::Ok();
  Slot* slot = call.slot >= 0 ? &slots_[static_cast<std::size_t>(call.slot)] : nullptr;
  if (engine_done) {
    if (slot != nullptr) {
      TRTET_RETURN_IF_ERROR(ensure_made(slot->engine_done));
      TRTET_RETURN_IF_ERROR(slot->engine_done.record(call.stream()));
      slot->engine_recorded = true;
      slot->engine_stream = call.where.id;
    }
    engine_slot_ = call.slot;  // -1: completion_, recorded at the end of this call, marks it
    engine_pending_ = true;
    engine_stream_ = call.where.id;
  }
  if (copies_done && slot != nullptr && call.staged_outputs) {
    TRTET_RETURN_IF_ERROR(ensure_made(slot->copies_done));
    TRTET_RETURN_IF_ERROR(slot->copies_done.record(call.stream()));
    slot->copies_recorded = true;
    slot->copies_stream = call.where.id;
  }
  return Status::Ok();
}

Status CallOrdering::join_earlier_calls(Call& call) {
  if (call.after_all || !completion_pending_ || call.where.id.same_as(last_stream_)) return Status::Ok();
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream(), completion_->get(), 0));
  return Status::Ok();
}

Status CallOrdering::record_completion(Call& call, const Status& queued) {
  // Whatever was queued, completion_ covers it, so later calls and destroy wait for it.
  Status recorded;
  if (call.capturing()) {
    const cudaError_t error = cudaEventRecordWithFlags(completion_->get(), call.stream(), cudaEventRecordExternal);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaEventRecordWithFlags", __FILE__, __LINE__);
  } else {
    // A call that failed part-way: the engine and slot events, too, cover what it queued.
    if (!queued.ok()) recorded = record_progress(call, /*engine_done=*/true, /*copies_done=*/true);
    if (recorded.ok()) recorded = join_earlier_calls(call);
    if (recorded.ok()) recorded = completion_->record(call.stream());
    if (recorded.ok()) {
      completion_pending_ = true;
      last_stream_ = call.where.id;
    }
  }
  if (call.where.joined() && recorded.ok()) {
    // The caller's stream continues after this call: once completion_ fires, nothing of it is left.
    const cudaError_t error = cudaStreamWaitEvent(call.where.choice.caller, completion_->get(), 0);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaStreamWaitEvent", __FILE__, __LINE__);
  }
  return recorded;
}

Status CallOrdering::record_repeat(cudaStream_t stream) {
#ifndef TRTET_PLANT_REPEAT_SKIPS_COMPLETION  // planted bug: completion_ does not cover the repeat
  TRTET_RETURN_IF_ERROR(completion_->record(stream));
#else
  (void)stream;
#endif
  completion_pending_ = true;
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
