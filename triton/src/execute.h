// Execute: one request served by an instance, start to end (execute.cpp).
#pragma once

#include <cstdint>

#include "instance.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

TRITONSERVER_Error* run_request(InstanceState& state, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                std::uint64_t& compute_start, std::uint64_t& compute_end);

// After a successful request's response is sent: its engine's GPU time (where it was measured) into
// the instance's counters. Off the request's own latency: the client has its response by then.
void account_gpu_time(InstanceState& state);

// A request the instance is done with: its response sent (with its error, where it failed), its
// statistics reported, the request released; with `last`, the batch's statistics too. In the
// instance's thread (send_from instance) or its completion thread (Note [sending from a completion
// thread]); it deletes the request's error.
void finish_request(InstanceState& state, FinishedRequest& done);

// A successful request's compute time to the plan set's controller, and its GPU time (where it was
// measured) to the counters: in the instance's thread, which owns the tracer.
void took_request(InstanceState& state, std::uint64_t compute_start, std::uint64_t compute_end);

}  // namespace trtet_triton
