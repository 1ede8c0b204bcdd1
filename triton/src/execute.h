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

}  // namespace trtet_triton
