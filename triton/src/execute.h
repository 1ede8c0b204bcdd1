// Execute: one request served by an instance, start to end (execute.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "instance.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// The device of memory Triton names: the GPU `id`, or the host.
::executorch::aten::Device device_of(TRITONSERVER_MemoryType type, std::int64_t id);
std::vector<::executorch::aten::SizesType> sizes_of(const std::vector<std::int64_t>& dims);

// The call on the instance's stream under its guard (the plan set's stream taken first, where the
// model follows one), then, where `wait`, the wait for that stream: null, or the call's failure (a
// sticky CUDA error poisons the process: Note [the fault domain]). `called` holds the method's outputs.
TRITONSERVER_Error* call_method(InstanceState& state, bool wait, std::optional<etr::Result<std::vector<etr::EValue>>>& called,
                                std::uint64_t& compute_start, std::uint64_t& compute_end);

// A request's input as Triton gives it.
struct InputView {
  TRITONBACKEND_Input* input = nullptr;
  const std::int64_t* shape = nullptr;
  std::uint32_t dims = 0;
  std::uint64_t bytes = 0;
  std::uint32_t buffers = 0;
};

// Input i of `request`: found, its type, its shape (against the program's, or its bound) and its
// bytes checked, and batched, its dim 0 against the first input's; nothing read or copied.
TRITONSERVER_Error* read_input(const ModelState& model, TRITONBACKEND_Request* request, std::size_t i, InputView& view);
// Every input of `request` so checked (and their count); each one's shape into `shapes`.
TRITONSERVER_Error* check_request(const ModelState& model, TRITONBACKEND_Request* request,
                                  std::vector<std::vector<std::int64_t>>& shapes);

TRITONSERVER_Error* run_request(InstanceState& state, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                std::uint64_t& compute_start, std::uint64_t& compute_end);

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

// An execute of several requests of a batching model (Note [batching requests]): each checked, the
// valid ones served in calls of several, every request finished through `finisher`.
void serve_batched(InstanceState& state, TRITONBACKEND_Request** requests, std::uint32_t count,
                   ExecuteFinisher& finisher);

// A request the instance is done with: its response sent (with its error, where it failed), its
// statistics reported, the request released; with `last`, the batch's statistics too. In the
// instance's thread (send_from instance) or its completion thread (Note [sending from a completion
// thread]); it deletes the request's error.
void finish_request(InstanceState& state, FinishedRequest& done);

// A successful request's compute time to the plan set's controller, and its GPU time (where it was
// measured) to the counters: in the instance's thread, which owns the tracer.
void took_request(InstanceState& state, std::uint64_t compute_start, std::uint64_t compute_end);

}  // namespace trtet_triton
