// A stand-in for the few functions of Triton's C API that finishing a request calls (fake_server.cpp):
// each call recorded, in order, with the thread it came from, so a test can check what the backend
// does with a request once it is done with it, with no server. Not a server: it answers nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trtet_triton/triton_api.h"

namespace fake_server {

struct Call {
  std::string what;  // "send", "stats", "batch_stats", "release", "error_delete"
  std::uintptr_t request = 0;  // the request or response it concerns (its fake handle), or the error
  std::thread::id thread;
  std::uint64_t at_ns = 0;  // the steady clock, in the backend's now_ns()
  // stats: success and the four points; batch_stats: batch size and the four points; send: whether
  // it carried an error, and its message.
  bool success = false;
  std::uint64_t size = 0;
  std::uint64_t exec_start = 0, compute_start = 0, compute_end = 0, exec_end = 0;
  std::string message;
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_UNKNOWN;  // send: its error's code
};

// Everything recorded since the last reset().
std::vector<Call> calls();
void reset();
// Called inside the fake ResponseSend before it records (a test's latch), or nothing.
void on_send(std::function<void(std::uintptr_t response)> hook);
// Fake handles: distinct addresses the backend passes around and never dereferences.
TRITONBACKEND_Request* request(int k);
TRITONBACKEND_Response* response(int k);
TRITONBACKEND_ModelInstance* instance();
// Errors made by TRITONSERVER_ErrorNew and not yet deleted.
int live_errors();

// A request's input as the fake server holds it: what TRITONBACKEND_InputProperties answers.
struct Input {
  std::string name;
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_FP32;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;  // 0: the shape's FP32 bytes
};
// Request k's inputs (what TRITONBACKEND_RequestInputCount, RequestInput and InputProperties answer);
// its data is read only where it has pieces. Calls that would reach other data or outputs answer an error.
void set_request(int k, std::vector<Input> inputs);
// Request k's input i given as these pieces of host memory (TRITONBACKEND_InputBuffer answers piece b
// as buffer b); without: one buffer, whose data the fake server does not hold. set_request clears them.
void set_pieces(int k, std::size_t i, std::vector<std::string> pieces);
// Request k's input i answers 0 buffers, its byte size kept: a state Triton's core does not hand a
// backend (S63 saw one on the H100; execute.h gather_input). set_request clears it.
void set_no_buffers(int k, std::size_t i);

// Log lines: with capture on, TRITONSERVER_LogIsEnabled answers true for every level and each line
// TRITONSERVER_LogMessage gets is kept, as given; off (the default), none is. Either way clears them.
void capture_logs(bool on);
std::vector<std::string> logs();

// What TRITONBACKEND_ModelInstanceState answers for instance(): the backend's state of it, which a test
// makes itself (a server would have had the backend set it at the instance's load).
void set_instance_state(void* state);
// A fake model and server (TRITONBACKEND_ModelServer answers server() for any model); the model's
// name, repository and config are not held, so its load stops at the first of them it asks for.
TRITONBACKEND_Model* model();
TRITONSERVER_Server* server();

}  // namespace fake_server
