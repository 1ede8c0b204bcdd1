// How a session's calls are ordered on the GPU: by events, across any streams, never by a
// device-wide synchronization (Note [pipelined calls] and Note [ordering replays] in
// call_ordering.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "cuda/event.h"
#include "cuda/stream_id.h"
#include "session/call.h"
#include "session/call_schedule.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// The events that order one session's calls: the completion event that covers every call so far,
/// per staging slot what its last users left in flight, the join of the caller's stream to the
/// session's own, and the per-call events callers wait on. Every method is called under the
/// session's lock.
class CallOrdering {
 public:
  /// Makes the events (on the current device) for `slots` staging slots.
  Status initialize(int slots);
  /// Releases everything; a caller still waiting on a call event, or a graph holding the
  /// completion event, keeps its own.
  void reset() noexcept;

  /// Starts `plan`'s call (Note [the call schedule]): orders it after earlier calls (order()),
  /// frees `staging`'s retired staging once the call follows every earlier one, and returns the
  /// schedule's first phase. `done` is the call's own event (call_event()), or null where the call
  /// returns at once. On an error, whatever was queued is covered, as a dropped schedule does.
  Result<CallSchedule::CopyIn> begin(const CallPlan& plan, cuda::Event* done, StagingStore& staging);
  /// Starts a repeated call (Note [repeated calls]): its one phase, the engine. The kept call
  /// followed every earlier call on the same stream, so it orders nothing.
  CallSchedule::Repeat begin_repeat(const CallPlan& plan) noexcept;

  /// An event for the caller to wait on after the lock is released: one no waiting caller holds
  /// any more, else a new one.
  Result<SharedEvent> call_event();

  /// The event that covers every call so far (for the staging's buffers that graphs still hold).
  const SharedEvent& completion() const noexcept { return completion_; }
  /// Blocks until every call so far (and every replay launched so far) is complete.
  void wait_for_all() noexcept;
  std::uint64_t whole_call_waits() const noexcept { return whole_call_waits_; }
  /// Calls that waited on the GPU for an earlier call on another stream.
  std::uint64_t cross_stream_waits() const noexcept { return cross_stream_waits_; }
  /// Calls recorded into a caller's capture.
  std::uint64_t captures() const noexcept { return captures_; }

 private:
  // A call's schedule makes the waits and records below, each at its place (call_schedule.h).
  friend class CallSchedule;

  /// Orders `plan`'s call after earlier calls: a call on the session's own stream starts after
  /// the caller's stream's work so far; a capture, every call once a graph may replay, and a call
  /// that frees outgrown staging wait for every earlier call; a call on the stream of the previous
  /// call needs nothing. Returns that, and the waits the call's copies in and its engine make.
  Result<CallOrder> order(const CallPlan& plan);
  /// The copies into the call's slot wait for the engine of the slot's last user.
  Status wait_before_copies(const CallOrder& order, cudaStream_t stream) const;
  /// The engine waits for the previous engine, and for the last copies out of the call's slot.
  Status wait_before_engine(const CallOrder& order, cudaStream_t stream) const;
  /// The call's engine is queued: its slot's engine event, and where the last engine ends (eager
  /// calls only).
  Status engine_done(const CallPlan& plan);
  /// The call's copies out of its slot are queued: the slot's copies event (eager calls only).
  Status copies_done(const CallPlan& plan);
  /// After the call's work (all of it, or part of it where it `failed`): the completion event
  /// covers whatever was queued, and a joined caller's stream continues after it. Returns the
  /// failure of these records, if any; where one failed, the call's stream has been waited for
  /// (Note [a record that failed]).
  Status record_completion(const CallPlan& plan, const CallOrder& order, bool failed);
  /// A repeated call (Note [repeated calls]): its work is covered like any other, and where the
  /// record fails its stream is waited for.
  Status record_repeat(cudaStream_t stream);
  /// A schedule dropped part-way: record_completion (or record_repeat) for what it queued, their
  /// errors dropped (the failed phase's error is the call's).
  void record_failed(const CallPlan& plan, const CallOrder& order, bool repeat) noexcept;
  /// A graph holding a call of this session may replay: eager calls wait for every earlier call.
  void mark_captured() noexcept {
    captured_ = true;
    ++captures_;
  }

  /// A staging slot: what its last users left in flight.
  struct Slot {
    cuda::Event engine_done;       ///< after the last user's engine: the slot's input staging is free
    cuda::Event copies_done;       ///< after its last copies out: the slot's output staging is free
    cuda::StreamId engine_stream;  ///< where engine_done was recorded
    cuda::StreamId copies_stream;  ///< where copies_done was recorded
    bool engine_recorded = false;
    bool copies_recorded = false;
  };
  /// A call on the session's own stream starts after the caller's stream's work so far.
  Status join_caller(const CallPlan& plan);
  /// The waits a pipelined call's copies in and engine make (order.after_all unset).
  void decide_pipelined(const CallPlan& plan, CallOrder& order) const;
  /// After a failed record of an eager call's events: waits for `stream` (Note [a record that failed]).
  static void settle(cudaStream_t stream) noexcept;
  /// Before an eager call records completion_ on a stream other than the previous call's, that
  /// stream waits on completion_ as it was, so completion_ still covers every earlier call.
  Status join_earlier_calls(const CallPlan& plan, const CallOrder& order);

  cuda::Event join_in_;             ///< the caller's stream -> the own stream (back: completion_)
  std::vector<Slot> slots_;
  SharedEvent completion_;          ///< after every call (and every replay): covers all earlier ones
  bool completion_pending_ = false; ///< completion_ recorded for work that may be in flight
  bool captured_ = false;           ///< a graph holding a call of this session may replay
  cuda::StreamId last_stream_;      ///< the stream of the last eager call
  /// Where the last eager call's engine ends: its slot's engine_done, or (-1) completion_ as it
  /// recorded it (a call that stages nothing queues nothing after its engine).
  int engine_slot_ = -1;
  cuda::StreamId engine_stream_;    ///< the stream that engine ran on
  bool engine_pending_ = false;     ///< an eager call has run the engine
  /// Per-call events for waits made after the lock is released: shared with the waiting caller, so
  /// reset() cannot free one under it; reused once only this list holds it.
  std::vector<SharedEvent> call_events_;
  std::uint64_t whole_call_waits_ = 0;
  std::uint64_t cross_stream_waits_ = 0;
  std::uint64_t captures_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
