// The backend's fault domain (fault.cpp; Note [the fault domain] in fault_rule.h): a sticky CUDA
// error poisons the process; from then on every request fails at once with the first cause, and the
// server is stopped so that its readiness and liveness report false.
#pragma once

#include <string>

#include "fault_rule.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// The server to stop when the process is poisoned (each model's load passes it; one server a process).
void remember_server(TRITONSERVER_Server* server);

// Marks the process poisoned by `cause` (the first cause is kept; later calls only log theirs), logs
// it, and stops the server from a thread of the backend's own (the stop waits for the models to unload).
void poison_process(const std::string& cause);

// True once the process is poisoned; `cause` gets the first cause.
bool process_poisoned(std::string& cause);

// Checks `error` (what a request's stream reported) against the rule; a sticky error poisons the
// process with `what` and the error as the cause. Returns true when the process is poisoned.
bool poison_if_sticky(cudaError_t error, const std::string& what);

// TRITONBACKEND_Finalize: waits for the stop thread, so that no code of the backend runs after it.
void finish_fault_domain();

}  // namespace trtet_triton
