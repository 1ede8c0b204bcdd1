// One call's work as a value: its phases (copy in, engine, copy out) are the only way to queue
// it, each usable once and only in that order (Note [the call schedule]).
#pragma once

#include <utility>

#include "common/status.h"
#include "cuda/event.h"
#include "session/call.h"
#include "session/call_timing.h"

namespace torch_tensorrt::executorch_backend::delegate {

class CallOrdering;

/// What a call's queued work comes to: how it was ordered, how its engine ran.
struct QueuedCall {
  CallOrder order;
  EngineRun run;
};

// Note [the call schedule]
// ------------------------
// A call's work is queued in one order: the ordering's join and whole-call wait (order()), the
// retired staging freed once the call follows every earlier one, the copies in (after the wait for
// the slot's last engine, between the copy-in marks), the completion event of a call that waits
// only for its inputs, the engine (after the waits for the previous engine and the slot's last
// copies out, between the engine marks), the slot's engine event, the copies out, the copy-out
// mark, the slot's copies event, the completion event of a call that waits for its outputs, and
// last the completion event that covers the call (and a joined caller's stream after it), with a
// captured graph's hold on what it uses. CallOrdering::begin makes the waits that come first and
// returns the schedule's first phase; each phase takes the work of its part (a callable), queues it
// between the waits, marks and records around it, and returns the next phase, consuming itself:
//
//   begin -> CopyIn --copy_in(fn)--> Engine --engine(fn)--> CopyOut --copy_out(fn)--> Done --finish()
//
// so a phase out of order does not compile. A repeated call (Note [repeated calls]) has one phase:
// begin_repeat -> Repeat --engine(fn)--> Done --finish(), and its completion event alone.
//
// A schedule dropped before finish() (a phase's work failed, or something below threw through it:
// the one exception fence is at the ExecuTorch boundary) covers what it queued on the way out, as
// finish() would: the slot's events and the completion event recorded after whatever was queued
// (CallOrdering::record_failed; Note [a record that failed]). So a failed call leaves the session as
// a call that returned: every event covers every call queued so far. The phase that fails returns
// its error after that.

/// The state a call's phases hand on to each other; owned by one phase at a time.
class CallSchedule {
 public:
  class CopyIn;
  class Engine;
  class CopyOut;
  class Repeat;
  class Done;

  CallSchedule(CallSchedule&& other) noexcept
      : ordering_(std::exchange(other.ordering_, nullptr)),
        staging_(other.staging_),
        plan_(other.plan_),
        done_(other.done_),
        repeat_(other.repeat_),
        order_(other.order_),
        run_(other.run_) {}
  CallSchedule(const CallSchedule&) = delete;             // one call's work, queued once
  CallSchedule& operator=(const CallSchedule&) = delete;
  CallSchedule& operator=(CallSchedule&&) = delete;       // handed on from phase to phase only
  /// Not finished: the failure path (Note [the call schedule]).
  ~CallSchedule();

 private:
  friend class CallOrdering;
  CallSchedule(CallOrdering& ordering, StagingStore* staging, const CallPlan& plan, cuda::Event* done,
               bool repeat) noexcept
      : ordering_(&ordering), staging_(staging), plan_(&plan), done_(done), repeat_(repeat) {}

  // The waits, marks and records between the phases' work, in the order they are queued.
  Status start_copies_in();
  Status end_copies_in();
  Status start_engine();
  Status end_engine();
  Status end_copies_out();
  Result<QueuedCall> finish();

  CallOrdering* ordering_;  ///< null once handed on or finished
  StagingStore* staging_;  ///< null for a repeated call (it stages nothing)
  const CallPlan* plan_;
  cuda::Event* done_;       ///< the call's own event (its caller waits on it), or null
  bool repeat_;             ///< a repeated call: the engine phase and the completion event only
  CallOrder order_;
  EngineRun run_;
};

/// The copies into the call's staging.
class CallSchedule::CopyIn {
 public:
  /// Queues `copy` (returns a Status) after the wait for the slot's last engine.
  template <typename Fn>
  Result<Engine> copy_in(Fn&& copy) &&;

 private:
  friend class CallOrdering;
  explicit CopyIn(CallSchedule schedule) noexcept : schedule_(std::move(schedule)) {}
  CallSchedule schedule_;
};

/// The engine's work.
class CallSchedule::Engine {
 public:
  /// Queues `run` (returns a Result<EngineRun>) after the waits for the previous engine and the
  /// slot's last copies out.
  template <typename Fn>
  Result<CopyOut> engine(Fn&& run) &&;

 private:
  friend class CopyIn;
  explicit Engine(CallSchedule schedule) noexcept : schedule_(std::move(schedule)) {}
  CallSchedule schedule_;
};

/// The copies out of the call's staging.
class CallSchedule::CopyOut {
 public:
  /// Queues `copy` (returns a Status) after the engine.
  template <typename Fn>
  Result<Done> copy_out(Fn&& copy) &&;

 private:
  friend class Engine;
  explicit CopyOut(CallSchedule schedule) noexcept : schedule_(std::move(schedule)) {}
  CallSchedule schedule_;
};

/// The one phase of a repeated call: the engine again, as the kept call ran it.
class CallSchedule::Repeat {
 public:
  /// Queues `run` (returns a Result<EngineRun>) between the engine marks.
  template <typename Fn>
  Result<Done> engine(Fn&& run) &&;

 private:
  friend class CallOrdering;
  explicit Repeat(CallSchedule schedule) noexcept : schedule_(std::move(schedule)) {}
  CallSchedule schedule_;
};

/// Every phase queued.
class CallSchedule::Done {
 public:
  /// Covers the call with the completion event (a joined caller's stream continues after it); a
  /// captured call's graph holds what it uses. How the call was ordered and its engine ran.
  Result<QueuedCall> finish() && {
    CallSchedule schedule = std::move(schedule_);
    return schedule.finish();
  }

 private:
  friend class CopyOut;
  friend class Repeat;
  explicit Done(CallSchedule schedule) noexcept : schedule_(std::move(schedule)) {}
  CallSchedule schedule_;
};

// Each phase takes the schedule out of itself first: where its work fails, the schedule is dropped
// (the failure path) before the error is returned.

template <typename Fn>
Result<CallSchedule::Engine> CallSchedule::CopyIn::copy_in(Fn&& copy) && {
  CallSchedule schedule = std::move(schedule_);
  TRTET_RETURN_IF_ERROR(schedule.start_copies_in());
  TRTET_RETURN_IF_ERROR(copy());
  TRTET_RETURN_IF_ERROR(schedule.end_copies_in());
  return Engine(std::move(schedule));
}

template <typename Fn>
Result<CallSchedule::CopyOut> CallSchedule::Engine::engine(Fn&& run) && {
  CallSchedule schedule = std::move(schedule_);
  TRTET_RETURN_IF_ERROR(schedule.start_engine());
  TRTET_ASSIGN_OR_RETURN(schedule.run_, run());
  TRTET_RETURN_IF_ERROR(schedule.end_engine());
  return CopyOut(std::move(schedule));
}

template <typename Fn>
Result<CallSchedule::Done> CallSchedule::CopyOut::copy_out(Fn&& copy) && {
  CallSchedule schedule = std::move(schedule_);
  TRTET_RETURN_IF_ERROR(copy());
  TRTET_RETURN_IF_ERROR(schedule.end_copies_out());
  return Done(std::move(schedule));
}

template <typename Fn>
Result<CallSchedule::Done> CallSchedule::Repeat::engine(Fn&& run) && {
  CallSchedule schedule = std::move(schedule_);
  record_mark(schedule.plan_->marks, Mark::kEngineStart, schedule.plan_->stream());
  Result<EngineRun> ran = run();
  record_mark(schedule.plan_->marks, Mark::kEngineEnd, schedule.plan_->stream());
  TRTET_ASSIGN_OR_RETURN(schedule.run_, std::move(ran));
  return Done(std::move(schedule));
}

}  // namespace torch_tensorrt::executorch_backend::delegate
