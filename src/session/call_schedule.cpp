#include "session/call_schedule.h"

#include "session/call_ordering.h"
#include "staging/staging.h"

namespace torch_tensorrt::executorch_backend::delegate {

CallSchedule::~CallSchedule() {
  if (ordering_ != nullptr) ordering_->record_failed(*plan_, order_, repeat_);
}

Status CallSchedule::start_copies_in() {
  TRTET_RETURN_IF_ERROR(ordering_->wait_before_copies(order_, plan_->stream()));
  if (plan_->staged_inputs) record_mark(plan_->marks, Mark::kCopyInStart, plan_->stream());
  return Status::Ok();
}

Status CallSchedule::end_copies_in() {
  if (plan_->staged_inputs) record_mark(plan_->marks, Mark::kCopyInEnd, plan_->stream());
  if (plan_->completion == Completion::kWaitInputsConsumed) TRTET_RETURN_IF_ERROR(done_->record(plan_->stream()));
  return Status::Ok();
}

Status CallSchedule::start_engine() {
  TRTET_RETURN_IF_ERROR(ordering_->wait_before_engine(order_, plan_->stream()));
  record_mark(plan_->marks, Mark::kEngineStart, plan_->stream());
  return Status::Ok();
}

Status CallSchedule::end_engine() {
  record_mark(plan_->marks, Mark::kEngineEnd, plan_->stream());
  return ordering_->engine_done(*plan_);
}

Status CallSchedule::end_copies_out() {
  if (plan_->staged_outputs) record_mark(plan_->marks, Mark::kCopyOutEnd, plan_->stream());
  TRTET_RETURN_IF_ERROR(ordering_->copies_done(*plan_));
  if (plan_->completion == Completion::kWaitOutputsReady) TRTET_RETURN_IF_ERROR(done_->record(plan_->stream()));
  return Status::Ok();
}

Result<QueuedCall> CallSchedule::finish() {
  CallOrdering& ordering = *std::exchange(ordering_, nullptr);  // finished: nothing left to the destructor
  const CallPlan& plan = *plan_;
  if (repeat_) {
    TRTET_RETURN_IF_ERROR(ordering.record_repeat(plan.stream()));
    return QueuedCall{order_, run_};
  }
  TRTET_RETURN_IF_ERROR(ordering.record_completion(plan, order_, /*failed=*/false));
  if (plan.capturing()) {
    // The caller's graph keeps what the call left it pointing at (staging.h, GraphHold).
    std::vector<bool> staged(plan.bindings.size());
    for (std::size_t i = 0; i < plan.bindings.size(); ++i) staged[i] = plan.bindings[i].staged;
    TRTET_RETURN_IF_ERROR(retain_in_capture(plan.stream(), staging_->graph_hold(plan.slot, staged)));
    ordering.mark_captured();
  }
  return QueuedCall{order_, run_};
}

}  // namespace torch_tensorrt::executorch_backend::delegate
