// The stand-in for Triton's C API that finish_test.cpp links (fake_server.h): errors are real objects
// (made, read and deleted), metrics go nowhere, log lines are kept where a test asks (capture_logs),
// and the calls that finish a request are recorded.
#include "fake_server.h"

#include <atomic>
#include <string>
#include <utility>

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
char g_handles[5][64];  // requests, responses, the instance, the model, the server: addresses only
void* g_instance_state = nullptr;
std::vector<Input> g_requests[64];
char g_inputs[64][16];  // request k's input i: &g_inputs[k][i]
std::vector<std::vector<std::string>> g_pieces[64];  // request k's input i's pieces (set_pieces)
std::vector<bool> g_no_buffers[64];                   // request k's input i answers 0 buffers (set_no_buffers)
std::atomic<bool> g_capture_logs{false};
std::vector<std::string> g_logs;  // under g_mutex

int index_of(const void* handle, const char* base, std::size_t stride) {
  return static_cast<int>((static_cast<const char*>(handle) - base) / static_cast<std::ptrdiff_t>(stride));
}

// A statistics call: its four points.
Call timed(const char* what, std::uint64_t exec_start, std::uint64_t compute_start, std::uint64_t compute_end,
           std::uint64_t exec_end) {
  Call call;
  call.what = what;
  call.exec_start = exec_start;
  call.compute_start = compute_start;
  call.compute_end = compute_end;
  call.exec_end = exec_end;
  return call;
}

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
void set_instance_state(void* state) { g_instance_state = state; }
TRITONBACKEND_Model* model() { return reinterpret_cast<TRITONBACKEND_Model*>(&g_handles[3][0]); }
TRITONSERVER_Server* server() { return reinterpret_cast<TRITONSERVER_Server*>(&g_handles[4][0]); }
void set_request(int k, std::vector<Input> inputs) {
  for (Input& input : inputs) {
    if (input.bytes != 0) continue;
    std::uint64_t bytes = 4;
    for (std::int64_t d : input.shape) bytes *= static_cast<std::uint64_t>(d < 0 ? 0 : d);
    input.bytes = bytes;
  }
  g_pieces[k].assign(inputs.size(), {});
  g_no_buffers[k].assign(inputs.size(), false);
  g_requests[k] = std::move(inputs);
}

void set_pieces(int k, std::size_t i, std::vector<std::string> pieces) { g_pieces[k].at(i) = std::move(pieces); }

void set_no_buffers(int k, std::size_t i) { g_no_buffers[k].at(i) = true; }

void capture_logs(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_capture_logs = on;
  g_logs.clear();
}
std::vector<std::string> logs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_logs;
}

// The request k and input i behind an input handle (&g_inputs[k][i]).
std::pair<std::ptrdiff_t, std::ptrdiff_t> input_at(const TRITONBACKEND_Input* input) {
  const std::ptrdiff_t at = reinterpret_cast<const char*>(input) - &g_inputs[0][0];
  return {at / 16, at % 16};
}

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
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel, const char*, const int, const char* msg) {
  if (fake_server::g_capture_logs) {
    std::lock_guard<std::mutex> lock(fake_server::g_mutex);
    fake_server::g_logs.emplace_back(msg == nullptr ? "" : msg);
  }
  return nullptr;
}
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel) { return fake_server::g_capture_logs; }
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
  if (error != nullptr) {  // the caller keeps the error
    call.message = error->message;
    call.code = error->code;
  }
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
  Call call = fake_server::timed("stats", exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns);
  call.request = reinterpret_cast<std::uintptr_t>(request);
  call.success = success;
  fake_server::record(call);
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance*,
                                                                     const std::uint64_t batch_size,
                                                                     const std::uint64_t exec_start_ns,
                                                                     const std::uint64_t compute_start_ns,
                                                                     const std::uint64_t compute_end_ns,
                                                                     const std::uint64_t exec_end_ns) {
  Call call = fake_server::timed("batch_stats", exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns);
  call.size = batch_size;
  fake_server::record(call);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response, TRITONBACKEND_Request* request) {
  *response = fake_server::response(fake_server::index_of(request, fake_server::g_handles[0], 1));
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, std::uint32_t* count) {
  *count = static_cast<std::uint32_t>(fake_server::g_requests[fake_server::index_of(request, fake_server::g_handles[0], 1)].size());
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name, TRITONBACKEND_Input** input) {
  const int k = fake_server::index_of(request, fake_server::g_handles[0], 1);
  const auto& inputs = fake_server::g_requests[k];
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].name == name) {
      *input = reinterpret_cast<TRITONBACKEND_Input*>(&fake_server::g_inputs[k][i]);
      return nullptr;
    }
  }
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, (std::string("no input named ") + name).c_str());
}
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype, const std::int64_t** shape,
                                                  std::uint32_t* dims_count, std::uint64_t* byte_size,
                                                  std::uint32_t* buffer_count) {
  const auto [k, i] = fake_server::input_at(input);
  const fake_server::Input& in = fake_server::g_requests[k][i];
  if (name != nullptr) *name = in.name.c_str();
  if (datatype != nullptr) *datatype = in.type;
  if (shape != nullptr) *shape = in.shape.data();
  if (dims_count != nullptr) *dims_count = static_cast<std::uint32_t>(in.shape.size());
  if (byte_size != nullptr) *byte_size = in.bytes;
  const auto& pieces = fake_server::g_pieces[k][i];
  if (buffer_count != nullptr) {
    *buffer_count = fake_server::g_no_buffers[k][i] ? 0 : pieces.empty() ? 1 : static_cast<std::uint32_t>(pieces.size());
  }
  return nullptr;
}

// What the fake server does not hold (data, outputs, a server to stop): an error that says so.
namespace {
TRITONSERVER_Error* not_held(const char* what) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, (std::string("the fake server has no ") + what).c_str());
}
}  // namespace
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, const std::uint32_t index, const void** buffer,
                                              std::uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                              std::int64_t* memory_type_id) {
  const auto [k, i] = fake_server::input_at(input);
  const auto& pieces = fake_server::g_pieces[k][i];
  if (index >= pieces.size()) return not_held("input data");
  *buffer = pieces[index].data();
  *buffer_byte_size = pieces[index].size();
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request*, std::uint32_t*) { return not_held("outputs"); }
TRITONSERVER_Error* TRITONBACKEND_RequestOutputBufferProperties(TRITONBACKEND_Request*, const char*, std::size_t*,
                                                                TRITONSERVER_MemoryType*, std::int64_t*) {
  return not_held("outputs");
}
TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request*, const std::uint32_t, const char**) {
  return not_held("outputs");
}
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response*, TRITONBACKEND_Output**, const char*,
                                                 const TRITONSERVER_DataType, const std::int64_t*, const std::uint32_t) {
  return not_held("outputs");
}
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output*, void**, const std::uint64_t, TRITONSERVER_MemoryType*,
                                               std::int64_t*) {
  return not_held("outputs");
}
TRITONSERVER_Error* TRITONSERVER_ServerStop(TRITONSERVER_Server*) { return not_held("server to stop"); }
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance*, void** state) {
  *state = fake_server::g_instance_state;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelServer(TRITONBACKEND_Model*, TRITONSERVER_Server** server) {
  *server = fake_server::server();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ApiVersion(std::uint32_t*, std::uint32_t*) { return not_held("API version"); }
TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend*, const char**) { return not_held("backend name"); }
TRITONSERVER_Error* TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend*, TRITONSERVER_Message**) {
  return not_held("backend config");
}
TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model*, const char**) { return not_held("model name"); }
TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model*, std::uint64_t*) { return not_held("model version"); }
TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model*, TRITONBACKEND_ArtifactType*, const char**) {
  return not_held("model repository");
}
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model*, const std::uint32_t, TRITONSERVER_Message**) {
  return not_held("model config");
}
TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model*, bool*) { return not_held("model config"); }
TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model*, const std::uint32_t, TRITONSERVER_Message*) {
  return not_held("model config");
}
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model*, void*) { return not_held("model state"); }
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model*, void**) { return not_held("model state"); }
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance*, const char**) {
  return not_held("instance name");
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance*, TRITONSERVER_InstanceGroupKind*) {
  return not_held("instance kind");
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance*, std::int32_t*) {
  return not_held("instance device");
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Model**) {
  return not_held("instance model");
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance*, void*) {
  return not_held("instance state");
}
TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message**, const char*, size_t) {
  return not_held("messages");
}
TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message*) { return nullptr; }
TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message*, const char**, size_t*) {
  return not_held("messages");
}

}  // extern "C"
