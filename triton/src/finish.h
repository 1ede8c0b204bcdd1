// A request the instance is done with, finished: its response sent, its statistics reported, the
// request released, in the instance's thread or its completion thread (finish.cpp; Note [sending
// from a completion thread] in completion.h).
#pragma once

#include <cstdint>

#include "instance.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// A request the instance is done with: its response sent (with its error, where it failed), its
// statistics reported, the request released; with `last`, the batch's statistics too. In the
// instance's thread (send_from instance) or its completion thread (Note [sending from a completion
// thread]: `handed_over`, as the mode is the caller's to say, not the instance's state at the time);
// it deletes the request's error.
void finish_request(InstanceState& state, FinishedRequest& done, bool handed_over);

// A successful request's compute time to the plan set's controller, and its GPU time (where it was
// measured) to the counters: in the instance's thread, which owns the tracer.
void took_request(InstanceState& state, std::uint64_t compute_start, std::uint64_t compute_end);

// After a successful request's response is sent: its engine's GPU time (where it was measured) into
// the instance's counters. Off the request's own latency: the client has its response by then.
void account_gpu_time(InstanceState& state);

// An execute's requests as each is finished, in the order they are: the batch's figures kept, then
// the request finished in this thread (finish_request) or handed to the completion thread.
class ExecuteFinisher {
 public:
  ExecuteFinisher(InstanceState& state, std::uint64_t exec_start) : state_(state), exec_start_(exec_start) {}
  // `last`: no request of this execute is finished after it.
  void finish(FinishedRequest done, bool last);
  // In the instance's thread: the batch's statistics (the completion thread reports them with the last).
  void end();

 private:
  InstanceState& state_;
  std::uint64_t exec_start_;
  std::uint64_t served_ = 0;  // requests served
  std::uint64_t rows_ = 0;    // their batch sizes, added up
  std::uint64_t compute_start_ = 0;
  std::uint64_t compute_end_ = 0;
};

// send_from completion_thread: the instance's completion thread, which finishes each request handed
// to it with finish_request (and, should that throw, still answers and releases the request).
void start_completion_thread(InstanceState& state);

}  // namespace trtet_triton
