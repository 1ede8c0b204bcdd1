// The stand-in for Triton's C API that finish_test.cpp links (fake_server.h): errors are real objects
// (made, read and deleted), metrics and log lines go nowhere, and the calls that finish a request are
// recorded.
#include "fake_server.h"

#include <atomic>
#include <string>

#include "errors.h"

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

namespace fake_server {
namespace {

std::mutex g_mutex;
std::vector<Call> g_calls;
std::function<void(std::uintptr_t)> g_on_send;
std::atomic<int> g_live_errors{0};
char g_handles[3][64];  // requests, responses, the instance: addresses only

void record(Call call) {
  call.thread = std::this_thread::get_id();
  call.at_ns = trtet_triton::now_ns();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_calls.push_back(std::move(call));
}

}  // namespace

std::vector<Call> calls() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls;
}
void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_calls.clear();
  g_on_send = nullptr;
}
void on_send(std::function<void(std::uintptr_t)> hook) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_on_send = std::move(hook);
}
TRITONBACKEND_Request* request(int k) { return reinterpret_cast<TRITONBACKEND_Request*>(&g_handles[0][k]); }
TRITONBACKEND_Response* response(int k) { return reinterpret_cast<TRITONBACKEND_Response*>(&g_handles[1][k]); }
TRITONBACKEND_ModelInstance* instance() { return reinterpret_cast<TRITONBACKEND_ModelInstance*>(&g_handles[2][0]); }
int live_errors() { return g_live_errors.load(); }

}  // namespace fake_server

using fake_server::Call;

extern "C" {

TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) {
  ++fake_server::g_live_errors;
  return new TRITONSERVER_Error{code, msg == nullptr ? "" : msg};
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) {
  if (error == nullptr) return;
  --fake_server::g_live_errors;
  delete error;
}
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) { return error->code; }
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) { return error->message.c_str(); }
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel, const char*, const int, const char*) { return nullptr; }
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel) { return false; }
TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(const char*, const TRITONSERVER_ParameterType, const void*) { return nullptr; }
void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter*) {}
TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(TRITONSERVER_MetricFamily** family, const TRITONSERVER_MetricKind,
                                                 const char*, const char*) {
  *family = nullptr;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily*) { return nullptr; }
TRITONSERVER_Error* TRITONSERVER_MetricNew(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily*,
                                           const TRITONSERVER_Parameter**, const std::uint64_t) {
  *metric = nullptr;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric*) { return nullptr; }
TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric*, double) { return nullptr; }
TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric*, double) { return nullptr; }

TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, const std::uint32_t,
                                               TRITONSERVER_Error* error) {
  std::function<void(std::uintptr_t)> hook;
  {
    std::lock_guard<std::mutex> lock(fake_server::g_mutex);
    hook = fake_server::g_on_send;
  }
  if (hook) hook(reinterpret_cast<std::uintptr_t>(response));
  Call call;
  call.what = "send";
  call.request = reinterpret_cast<std::uintptr_t>(response);
  call.success = error == nullptr;
  if (error != nullptr) call.message = error->message;  // the caller keeps the error
  fake_server::record(call);
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, std::uint32_t) {
  Call call;
  call.what = "release";
  call.request = reinterpret_cast<std::uintptr_t>(request);
  fake_server::record(call);
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request* request,
                                                                const bool success, const std::uint64_t exec_start_ns,
                                                                const std::uint64_t compute_start_ns,
                                                                const std::uint64_t compute_end_ns,
                                                                const std::uint64_t exec_end_ns) {
  Call call;
  call.what = "stats";
  call.request = reinterpret_cast<std::uintptr_t>(request);
  call.success = success;
  call.exec_start = exec_start_ns;
  call.compute_start = compute_start_ns;
  call.compute_end = compute_end_ns;
  call.exec_end = exec_end_ns;
  fake_server::record(call);
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance*,
                                                                     const std::uint64_t batch_size,
                                                                     const std::uint64_t exec_start_ns,
                                                                     const std::uint64_t compute_start_ns,
                                                                     const std::uint64_t compute_end_ns,
                                                                     const std::uint64_t exec_end_ns) {
  Call call;
  call.what = "batch_stats";
  call.size = batch_size;
  call.exec_start = exec_start_ns;
  call.compute_start = compute_start_ns;
  call.compute_end = compute_end_ns;
  call.exec_end = exec_end_ns;
  fake_server::record(call);
  return nullptr;
}

}  // extern "C"
