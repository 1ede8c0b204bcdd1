#include "finish.h"

#include <torch_tensorrt/executorch/Profiling.h>

#include <algorithm>
#include <memory>
#include <string>

#include "errors.h"
#include "plan_set_serving.h"

namespace trtet_triton {

void finish_request(InstanceState& state, FinishedRequest& done, const bool handed_over) {
  const std::uint64_t taken = now_ns();  // on the completion thread: the end of the hand-over
  if (done.response != nullptr) {
    // The response goes to the server; the error stays ours to free.
    TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(done.response, kTritonResponseCompleteFinal, done.error);
    done.response = nullptr;  // the server's now, sent or not
    if (sent != nullptr) {
      log(TRITONSERVER_LOG_ERROR, std::string("sending a response: ") + TRITONSERVER_ErrorMessage(sent));
      TRITONSERVER_ErrorDelete(sent);
    }
  } else if (done.error != nullptr) {
    log(TRITONSERVER_LOG_ERROR, std::string("no response for a request: ") + TRITONSERVER_ErrorMessage(done.error));
  }
  if (done.error != nullptr) TRITONSERVER_ErrorDelete(done.error);
  done.error = nullptr;
  const std::uint64_t sent = now_ns();
  done.points.send = sent;
  // Handed over, the end of execution is taken before the send, as Triton's TensorRT backend takes
  // it (Note [sending from a completion thread]); in the instance's thread, after it.
  const std::uint64_t exec_end = handed_over ? taken : sent;
  TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportStatistics(
      state.triton, done.request, done.ok, done.exec_start, done.compute_start, done.compute_end, exec_end);
  if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
  if (done.ok && !handed_over) took_request(state, done.compute_start, done.compute_end);
  if (handed_over && done.last && done.batch_ok) {
    // Before the batch's last request is released: the instance is Triton's until then.
    TRITONSERVER_Error* batch = TRITONBACKEND_ModelInstanceReportBatchStatistics(
        state.triton, done.batch_served, done.exec_start, done.batch_compute_start, done.batch_compute_end, exec_end);
    if (batch != nullptr) TRITONSERVER_ErrorDelete(batch);
  }
  TRITONSERVER_Error* released = TRITONBACKEND_RequestRelease(done.request, kTritonRequestReleaseAll);
  if (released != nullptr) TRITONSERVER_ErrorDelete(released);
  done.request = nullptr;
  if (done.ok && done.phased) {  // every point set: the request got through run_request (Note [request phases])
    done.points.release = now_ns();
    state.metrics.add_phases(done.points);
  }
}

void ExecuteFinisher::finish(FinishedRequest done, const bool last) {
  done.exec_start = exec_start_;
  if (done.ok) {
    if (served_++ == 0) compute_start_ = done.compute_start;
    compute_end_ = std::max(compute_end_, done.compute_end);
    rows_ += done.rows;
  }
  done.last = last;
  done.batch_ok = served_ > 0;
  done.batch_served = rows_;
  done.batch_compute_start = compute_start_;
  done.batch_compute_end = compute_end_;
  if (state_.completer != nullptr) {
    // Nothing of the instance touches the request again (Note [sending from a completion thread]).
    const bool ok = done.ok;
    const std::uint64_t start = done.compute_start;
    const std::uint64_t end = done.compute_end;
    state_.completer->post(done);
    if (ok) took_request(state_, start, end);
  } else {
    finish_request(state_, done, /*handed_over=*/false);
  }
}

void ExecuteFinisher::end() {
  if (served_ == 0) return;
  if (state_.completer != nullptr) return;      // reported with the last request
  TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportBatchStatistics(
      state_.triton, rows_, exec_start_, compute_start_, compute_end_, now_ns());
  if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
}

void took_request(InstanceState& state, std::uint64_t compute_start, std::uint64_t compute_end) {
  // The plan set's controller takes the request's compute time (Note [following the load]).
  if (state.set != nullptr) state.set->add_sample(state.set_index, (compute_end - compute_start) / 1e3, compute_end / 1e9);
  account_gpu_time(state);  // after the response is sent (or handed over) and its statistics taken
}

void account_gpu_time(InstanceState& state) {
  // The call's GPU work is done (its stream was synchronized): its engine and staging times are
  // known (Note [engine GPU time]).
  if (state.gpu_times == nullptr || !state.timed) return;
  state.timed = false;
  auto pending = et::flush_profiling(state.gpu_times);
  if (pending.ok() && *pending == 0 && state.gpu_times->engine_spans() > 0) {
    state.metrics.add(state.gpu_times->engine_ns(), state.gpu_times->staging_ns(), state.gpu_times->delegate_ns());
  }
}

void start_completion_thread(InstanceState& state) {
  InstanceState* self = &state;
  state.completer = std::make_unique<CompletionThread<FinishedRequest>>([self](FinishedRequest& done) {
    try {
      finish_request(*self, done, /*handed_over=*/true);
    } catch (...) {  // (an allocation in a log line): the request is still answered and released
      if (done.response != nullptr) {
        TRITONSERVER_Error* e = TRITONBACKEND_ResponseSend(done.response, kTritonResponseCompleteFinal, done.error);
        if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      }
      if (done.error != nullptr) TRITONSERVER_ErrorDelete(done.error);
      if (done.request != nullptr) {
        TRITONSERVER_Error* e = TRITONBACKEND_RequestRelease(done.request, kTritonRequestReleaseAll);
        if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      }
    }
  });
}

}  // namespace trtet_triton
