// libtriton_torchtrt_executorch.so: a Triton Inference Server backend that serves .pte programs whose
// TensorRT delegates run on this project's runtime, each GPU instance on a green-context partition of
// its own (docs/SERVING.md).
//
// Load (TRITONBACKEND_ModelInitialize), in this order, so that every refusal names its reason before
// any GPU work: the model's parameters (unknown keys by name), <version>/<model.pte>, the program's
// method metadata against the config's inputs and outputs (or the config auto-completed from them),
// the GPU (none: refused), the instance groups (KIND_GPU only, device indices against the machine),
// then the partitions: one split per device, shared by every model of the server that names the same
// plan file (a several-GPU plan file is checked against every GPU it names first), or one split of
// the model's own from its `sms` parameters.
// Each instance (TRITONBACKEND_ModelInstanceInitialize) takes its partition, makes its stream there
// and loads its own ExecuTorch Module; every execute runs under a CudaStreamGuard on that stream.
#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/event_tracer.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>
#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/PartitionPlan.h>
#include <torch_tensorrt/executorch/Profiling.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trtet_triton/triton_api.h"

namespace {

namespace et = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;
using Json = nlohmann::json;

constexpr const char* kBackend = "torchtrt_executorch";

// ---- errors and logging ----

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char small[512];
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  std::string text;
  if (n >= 0 && static_cast<std::size_t>(n) < sizeof small) {
    text.assign(small, static_cast<std::size_t>(n));
  } else if (n >= 0) {
    text.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(text.data(), text.size(), fmt, args);
    text.resize(static_cast<std::size_t>(n));
  }
  va_end(args);
  return text;
}

// A Triton error whose message starts with the backend's name, so a user reading the server's log
// or a client's exception knows which part refused.
TRITONSERVER_Error* error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, (std::string(kBackend) + ": " + message).c_str());
}

TRITONSERVER_Error_Code triton_code(et::ErrorCode code) {
  switch (code) {
    case et::ErrorCode::kInvalidArgument:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case et::ErrorCode::kNotSupported:
    case et::ErrorCode::kNoDevice:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

void log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, (std::string(kBackend) + ": " + message).c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

#define TRTET_TRITON_RETURN_IF_ERROR(expr) \
  do {                                     \
    TRITONSERVER_Error* trtet_e_ = (expr); \
    if (trtet_e_ != nullptr) return trtet_e_; \
  } while (0)

// The errors ExecuTorch and the delegate log while this thread runs a call (ExecuTorch reports a
// status code; the reason is in its log), so a failed load or request carries the delegate's message.
thread_local std::string t_executorch_errors;

void executorch_log(et_timestamp_t, et_pal_log_level_t level, const char* filename, const char*, size_t line,
                    const char* message, size_t length) {
  std::string text(message, length);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const bool is_error = level == kError || level == kFatal;
  if (is_error) {
    if (t_executorch_errors.size() < 8192) t_executorch_errors += (t_executorch_errors.empty() ? "" : "; ") + text;
  }
  const TRITONSERVER_LogLevel triton_level = is_error ? TRITONSERVER_LOG_ERROR : level == kInfo ? TRITONSERVER_LOG_INFO
                                                                                                : TRITONSERVER_LOG_VERBOSE;
  if (!TRITONSERVER_LogIsEnabled(triton_level)) return;
  const std::string line_text = format("executorch %s:%zu: %s", filename, line, text.c_str());
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(triton_level, __FILE__, __LINE__, line_text.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

std::string take_executorch_errors() {
  std::string text = std::move(t_executorch_errors);
  t_executorch_errors.clear();
  return text;
}

std::string executorch_failure(const std::string& what, etr::Error code) {
  std::string reasons = take_executorch_errors();
  return format("%s: ExecuTorch error %s (0x%x)%s%s", what.c_str(), etr::to_string(code), static_cast<unsigned>(code),
                reasons.empty() ? "" : ": ", reasons.c_str());
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// ---- the engine's GPU time (Note [engine GPU time]) ----
//
// Note [engine GPU time]
// ----------------------
// The delegate times its engines and its staging copies with CUDA events on the stream each call ran
// on whenever the method runs with an ExecuTorch EventTracer (torch_tensorrt/executorch/Profiling.h):
// "[gpu engine]" and "[gpu copy_in]" / "[gpu copy_out]" events whose metadata carries gpu_ns=D. Each
// instance's Module gets a tracer of the backend's own (GpuTimes) that keeps only those durations.
// After a request's stream is synchronized, flush_profiling() logs that call's times into it (all of
// them: the work is done), and the backend adds them to counters of Triton's metrics endpoint, one
// series per instance (labels model, version, instance, gpu):
//   trtet_engine_gpu_duration_us    the engines' GPU time of the requests that succeeded
//   trtet_staging_gpu_duration_us   the GPU time of the delegate's copies between host and device
//   trtet_engine_gpu_requests       how many requests those sums cover
// Triton's own statistics (TRITONBACKEND_ModelInstanceReportStatistics) stay host times: compute_infer
// is the host time from before execute to after the stream synchronize (binding, execute, the GPU
// work, output copies). Those statistics take points on the host clock, and a GPU duration is none,
// so the GPU time is reported beside them, not folded into them. Where the server runs without
// metrics (--allow-metrics=false) the families cannot be made; then no tracer is attached and no call
// is timed (the delegate records no events).

struct Metrics {
  TRITONSERVER_MetricFamily* engine_us = nullptr;
  TRITONSERVER_MetricFamily* staging_us = nullptr;
  TRITONSERVER_MetricFamily* requests = nullptr;
};
Metrics g_metrics;  // made in TRITONBACKEND_Initialize, deleted in TRITONBACKEND_Finalize

void delete_metric_families() {
  for (TRITONSERVER_MetricFamily** f : {&g_metrics.engine_us, &g_metrics.staging_us, &g_metrics.requests}) {
    if (*f == nullptr) continue;
    TRITONSERVER_Error* e = TRITONSERVER_MetricFamilyDelete(*f);
    if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    *f = nullptr;
  }
}

// Makes the three families; on any failure (a server without metrics) none, with the reason logged.
void make_metric_families() {
  const struct {
    TRITONSERVER_MetricFamily** family;
    const char* name;
    const char* help;
  } families[] = {
      {&g_metrics.engine_us, "trtet_engine_gpu_duration_us",
       "Cumulative GPU time of the TensorRT engines of successful requests, in microseconds, measured by the "
       "torchtrt_executorch delegate with CUDA events on the instance's stream"},
      {&g_metrics.staging_us, "trtet_staging_gpu_duration_us",
       "Cumulative GPU time of the delegate's host<->device staging copies of successful requests, in microseconds"},
      {&g_metrics.requests, "trtet_engine_gpu_requests",
       "Successful requests whose GPU times are in trtet_engine_gpu_duration_us and trtet_staging_gpu_duration_us"},
  };
  for (const auto& f : families) {
    TRITONSERVER_Error* e = TRITONSERVER_MetricFamilyNew(f.family, TRITONSERVER_METRIC_KIND_COUNTER, f.name, f.help);
    if (e != nullptr) {
      log(TRITONSERVER_LOG_INFO, format("engine GPU time not reported: metric family %s: %s", f.name,
                                        TRITONSERVER_ErrorMessage(e)));
      TRITONSERVER_ErrorDelete(e);
      *f.family = nullptr;
      delete_metric_families();
      return;
    }
  }
}

bool have_metrics() { return g_metrics.engine_us != nullptr; }

// One instance's series of the three counters.
struct InstanceMetrics {
  TRITONSERVER_Metric* engine_us = nullptr;
  TRITONSERVER_Metric* staging_us = nullptr;
  TRITONSERVER_Metric* requests = nullptr;

  ~InstanceMetrics() {
    for (TRITONSERVER_Metric* m : {engine_us, staging_us, requests}) {
      if (m == nullptr) continue;
      TRITONSERVER_Error* e = TRITONSERVER_MetricDelete(m);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    }
  }

  TRITONSERVER_Error* make(const std::string& model, std::uint64_t version, const std::string& instance, int gpu) {
    const std::string version_text = std::to_string(version);
    const std::string gpu_text = std::to_string(gpu);
    const std::pair<const char*, const char*> pairs[] = {
        {"model", model.c_str()}, {"version", version_text.c_str()}, {"instance", instance.c_str()}, {"gpu", gpu_text.c_str()}};
    std::vector<const TRITONSERVER_Parameter*> labels;
    for (const auto& [key, value] : pairs) labels.push_back(TRITONSERVER_ParameterNew(key, TRITONSERVER_PARAMETER_STRING, value));
    TRITONSERVER_Error* e = nullptr;
    const std::pair<TRITONSERVER_Metric**, TRITONSERVER_MetricFamily*> made[] = {
        {&engine_us, g_metrics.engine_us}, {&staging_us, g_metrics.staging_us}, {&requests, g_metrics.requests}};
    for (const auto& [metric, family] : made) {
      if (e == nullptr) e = TRITONSERVER_MetricNew(metric, family, labels.data(), labels.size());
    }
    for (const TRITONSERVER_Parameter* label : labels) {
      TRITONSERVER_ParameterDelete(const_cast<TRITONSERVER_Parameter*>(label));
    }
    return e;
  }

  void add(double engine_ns, double staging_ns) {
    for (const auto& [metric, value] : {std::pair<TRITONSERVER_Metric*, double>{engine_us, engine_ns / 1e3},
                                        {staging_us, staging_ns / 1e3},
                                        {requests, 1.0}}) {
      if (metric == nullptr) continue;
      TRITONSERVER_Error* e = TRITONSERVER_MetricIncrement(metric, value);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    }
  }
};

// An ExecuTorch EventTracer that keeps the delegate's GPU durations of the current request and
// nothing else (every other event is dropped).
class GpuTimes final : public etr::EventTracer {
 public:
  void reset() noexcept {
    engine_ns_ = 0;
    staging_ns_ = 0;
    engine_spans_ = 0;
  }
  double engine_ns() const noexcept { return engine_ns_; }
  double staging_ns() const noexcept { return staging_ns_; }
  int engine_spans() const noexcept { return engine_spans_; }

  void log_profiling_delegate(const char*, etr::DelegateDebugIntId, et_timestamp_t, et_timestamp_t,
                              const void* metadata, size_t length) override {
    if (metadata == nullptr || length == 0) return;
    const std::string_view text(static_cast<const char*>(metadata), std::min<size_t>(length, 512));
    const bool engine = text.find(" kind=gpu_engine") != std::string_view::npos;
    const bool staging = text.find(" kind=gpu_copy_in") != std::string_view::npos ||
                         text.find(" kind=gpu_copy_out") != std::string_view::npos;
    if (!engine && !staging) return;  // the host event, or another delegate's
    const std::size_t at = text.find(" gpu_ns=");
    if (at == std::string_view::npos) return;
    double ns = 0;
    for (std::size_t i = at + 8; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ns = ns * 10 + (text[i] - '0');
    if (engine) {
      engine_ns_ += ns;
      ++engine_spans_;
    } else {
      staging_ns_ += ns;
    }
  }

  void create_event_block(const char*) override {}
  etr::EventTracerEntry start_profiling(const char*, etr::ChainID, etr::DebugHandle) override { return {}; }
  etr::EventTracerEntry start_profiling_delegate(const char*, etr::DelegateDebugIntId) override { return {}; }
  void end_profiling_delegate(etr::EventTracerEntry, const void*, size_t) override {}
  void end_profiling(etr::EventTracerEntry) override {}
  void track_allocation(etr::AllocatorID, size_t) override {}
  etr::AllocatorID track_allocator(const char*) override { return 0; }
  etr::Result<bool> log_evalue(const etr::EValue&, etr::LoggedEValueType) override { return false; }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId,
                                                     const ::executorch::aten::Tensor&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId,
                                                     const etr::ArrayRef<::executorch::aten::Tensor>) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const int&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const bool&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const double&) override {
    return false;
  }
  void set_delegation_intermediate_output_filter(etr::EventTracerFilterBase*) override {}

 private:
  double engine_ns_ = 0;
  double staging_ns_ = 0;
  int engine_spans_ = 0;
};

// ---- data types: the program's scalar types Triton carries ----

struct DataType {
  ::executorch::aten::ScalarType et;
  TRITONSERVER_DataType triton;
  const char* config;  // model config's name
  std::size_t size;
};

constexpr DataType kDataTypes[] = {
    {::executorch::aten::ScalarType::Float, TRITONSERVER_TYPE_FP32, "TYPE_FP32", 4},
    {::executorch::aten::ScalarType::Half, TRITONSERVER_TYPE_FP16, "TYPE_FP16", 2},
    {::executorch::aten::ScalarType::BFloat16, TRITONSERVER_TYPE_BF16, "TYPE_BF16", 2},
    {::executorch::aten::ScalarType::Double, TRITONSERVER_TYPE_FP64, "TYPE_FP64", 8},
    {::executorch::aten::ScalarType::Int, TRITONSERVER_TYPE_INT32, "TYPE_INT32", 4},
    {::executorch::aten::ScalarType::Long, TRITONSERVER_TYPE_INT64, "TYPE_INT64", 8},
    {::executorch::aten::ScalarType::Short, TRITONSERVER_TYPE_INT16, "TYPE_INT16", 2},
    {::executorch::aten::ScalarType::Char, TRITONSERVER_TYPE_INT8, "TYPE_INT8", 1},
    {::executorch::aten::ScalarType::Byte, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", 1},
    {::executorch::aten::ScalarType::Bool, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", 1},
};

const DataType* data_type_of(::executorch::aten::ScalarType type) {
  for (const DataType& d : kDataTypes) {
    if (d.et == type) return &d;
  }
  return nullptr;
}

// ---- the model's parameters (Note [model parameters]) ----
//
// Note [model parameters]
// -----------------------
// The config's `parameters` map, every value a string_value. Keys:
//   sms                 SMs of each KIND_GPU instance's partition (a split of the model's own)
//   sms.<group>         the same for the instance group named <group> (overrides `sms`)
//   plan_file           a trtet-plan plan file (docs/PLANNING.md), relative to the model's directory:
//                       every device the model's instances are on is split as it says, once for the
//                       whole server; models naming the same plan share that split. A one-device plan
//                       ("trtet-partition-plan") is applied to each of those devices; a several-GPU
//                       plan ("trtet-partition-plans", trtet-plan --merge) gives each device its own,
//                       and is checked against every GPU it names (count and shape) before any split
//   plan_file.<d>       the plan for device <d> (overrides plan_file there)
//   plan_partition      the plan's partition this model's instances take (default: the model's name);
//                       with several instances on one device, <name>_<k> for the k-th (0, 1, ...)
//   method              the program's method (default "forward")
//   use_cuda_graphs, cuda_graph_cache_size, staging_budget_mb, weight_streaming_budget
//                       the delegate's load-time options (docs/DESIGN.md), passed as given: the
//                       delegate checks their values
// Anything else fails the load naming the key. The options that choose which code runs
// (tensorrt_runtime, allow_engine_host_code) are refused here with that reason: the config is
// untrusted input; they belong to the server's environment.
// No parameter: every instance runs on the whole GPU (Triton's usual way).

struct Parameters {
  std::optional<unsigned> sms;
  std::map<std::string, unsigned> group_sms;
  std::optional<std::string> plan_file;
  std::map<int, std::string> device_plan_file;
  std::string plan_partition;
  std::string method = "forward";
  std::vector<std::pair<std::string, std::string>> load_options;  // key, value
};

TRITONSERVER_Error* parse_unsigned(const std::string& key, const std::string& text, unsigned max, unsigned& out) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("parameter '%s' is '%s'; it takes a whole number of SMs", key.c_str(), text.c_str()));
  }
  const unsigned long value = std::stoul(text);
  if (value == 0 || value > max) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("parameter '%s' is %lu; it takes 1 to %u", key.c_str(), value, max));
  }
  out = static_cast<unsigned>(value);
  return nullptr;
}

TRITONSERVER_Error* parse_parameters(const Json& config, const std::string& model_name, Parameters& out) {
  out.plan_partition = model_name;
  auto it = config.find("parameters");
  if (it == config.end() || it->is_null()) return nullptr;
  if (!it->is_object()) return error(TRITONSERVER_ERROR_INVALID_ARG, "the config's 'parameters' is not a map");
  std::vector<std::string> unknown;
  for (const auto& [key, entry] : it->items()) {
    if (!entry.is_object() || !entry.contains("string_value") || !entry["string_value"].is_string()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("parameter '%s' has no string_value", key.c_str()));
    }
    const std::string value = entry["string_value"].get<std::string>();
    if (value.size() > 4096) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("parameter '%s' is longer than 4096 bytes", key.c_str()));
    }
    if (key == "sms") {
      unsigned n = 0;
      TRTET_TRITON_RETURN_IF_ERROR(parse_unsigned(key, value, 65536, n));
      out.sms = n;
    } else if (key.rfind("sms.", 0) == 0 && key.size() > 4) {
      unsigned n = 0;
      TRTET_TRITON_RETURN_IF_ERROR(parse_unsigned(key, value, 65536, n));
      out.group_sms[key.substr(4)] = n;
    } else if (key == "plan_file") {
      out.plan_file = value;
    } else if (key.rfind("plan_file.", 0) == 0 && key.size() > 10) {
      const std::string device = key.substr(10);
      if (device.size() > 4 || device.find_first_not_of("0123456789") != std::string::npos) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("parameter '%s': '%s' is not a device index", key.c_str(), device.c_str()));
      }
      out.device_plan_file[std::stoi(device)] = value;
    } else if (key == "plan_partition") {
      out.plan_partition = value;
    } else if (key == "method") {
      out.method = value;
    } else if (key == "use_cuda_graphs" || key == "cuda_graph_cache_size" || key == "staging_budget_mb" ||
               key == "weight_streaming_budget") {
      out.load_options.emplace_back(key, value);
    } else if (key == "tensorrt_runtime" || key == "allow_engine_host_code") {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter '%s' chooses which code the server runs, which a model's config may not; set it "
                          "in the server's environment (docs/SERVING.md)",
                          key.c_str()));
    } else {
      unknown.push_back(key);
    }
  }
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& k : unknown) names += (names.empty() ? "'" : ", '") + k + "'";
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("unknown parameter%s %s; the backend takes sms, sms.<group>, plan_file, plan_file.<device>, "
                        "plan_partition, method, use_cuda_graphs, cuda_graph_cache_size, staging_budget_mb, "
                        "weight_streaming_budget",
                        unknown.size() > 1 ? "s" : "", names.c_str()));
  }
  if (out.sms.has_value() || !out.group_sms.empty()) {
    if (out.plan_file.has_value() || !out.device_plan_file.empty()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "the parameters give both SM counts (sms) and a plan file (plan_file): give one");
    }
  }
  return nullptr;
}

// ---- one split per device, shared by the server's models ----

// A device's split: a plan's partitions (shared by every model naming that plan) or one model's own.
struct DeviceSplit {
  int device = -1;
  std::string owner;      // "plan <path>" or "model '<name>'"
  std::string plan_text;  // the plan's contents: another model's plan must be the same text
  et::PlannedPartitions planned;              // plan
  std::vector<et::GreenContext> own;          // a model's own split
  std::map<std::string, std::string> taken;   // plan partition -> the instance that took it
  int models = 0;                             // the models that hold it
};

std::mutex g_splits_mutex;
std::map<int, std::shared_ptr<DeviceSplit>> g_splits;

// Releases a model's hold on a device's split; the last holder destroys it (its partitions wait for
// their own streams).
void release_split(const std::shared_ptr<DeviceSplit>& split, const std::vector<std::string>& partitions_taken) {
  std::shared_ptr<DeviceSplit> last;
  {
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    for (const std::string& name : partitions_taken) split->taken.erase(name);
    if (--split->models == 0) {
      auto it = g_splits.find(split->device);
      if (it != g_splits.end() && it->second == split) g_splits.erase(it);
      last = split;
    }
  }
}

// ---- the model ----

struct IoSpec {
  std::string name;
  const DataType* type = nullptr;
  std::vector<std::int64_t> dims;
  bool planned = false;  // memory-planned by the program: set_input copies into it; outputs are not set
  std::size_t bytes = 0;
};

// One KIND_GPU instance as the config makes it: its group, device and partition size (0: whole GPU).
struct InstancePlace {
  std::string group;
  int device = 0;
  unsigned sms = 0;
  std::string plan_partition;  // with a plan
  int partition_index = -1;    // in the device's own split
  bool taken = false;
};

struct ModelState {
  std::string name;
  std::uint64_t version = 0;
  std::string program_path;
  Parameters parameters;
  std::vector<IoSpec> inputs;
  std::vector<IoSpec> outputs;
  std::vector<InstancePlace> places;
  std::map<int, std::shared_ptr<DeviceSplit>> splits;  // by device
  struct Plan {
    std::string path;  // resolved
    std::string text;
    et::PartitionPlans plans;  // one_device(): a one-device plan, for every device that names it
  };
  std::map<std::string, Plan> plans;  // by the parameter's value, read and checked before the GPU
  std::mutex mutex;                                      // places' `taken` (instances load in parallel)
  std::map<int, std::vector<std::string>> partitions_taken;  // plan partitions by device, released with the model

  ~ModelState() {
    for (auto& [device, split] : splits) release_split(split, partitions_taken[device]);
  }
};

TRITONSERVER_Error* get_int(const Json& value, const std::string& what, std::int64_t& out) {
  // The server writes 64-bit integers as JSON strings, 32-bit ones as numbers.
  if (value.is_number_integer()) {
    out = value.get<std::int64_t>();
    return nullptr;
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    std::size_t used = 0;
    try {
      out = std::stoll(text, &used);
    } catch (...) {
      used = 0;
    }
    if (used == text.size() && !text.empty()) return nullptr;
  }
  return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s is not an integer: %s", what.c_str(), value.dump().c_str()));
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// The program's inputs or outputs from the method's metadata.
TRITONSERVER_Error* read_io(const etr::MethodMeta& meta, bool inputs, std::vector<IoSpec>& out) {
  const std::size_t count = inputs ? meta.num_inputs() : meta.num_outputs();
  const char* kind = inputs ? "input" : "output";
  for (std::size_t i = 0; i < count; ++i) {
    auto tag = inputs ? meta.input_tag(i) : meta.output_tag(i);
    if (!tag.ok() || *tag != etr::Tag::Tensor) {
      return error(TRITONSERVER_ERROR_UNSUPPORTED,
                   format("the program's %s %zu is not a tensor; the backend serves tensor inputs and outputs only", kind, i));
    }
    auto info = inputs ? meta.input_tensor_meta(i) : meta.output_tensor_meta(i);
    if (!info.ok()) return error(TRITONSERVER_ERROR_INTERNAL, executorch_failure(format("reading %s %zu's metadata", kind, i), info.error()));
    IoSpec spec;
    spec.name = info->name().empty() ? format("%s_%zu", kind, i) : std::string(info->name());
    spec.type = data_type_of(info->scalar_type());
    if (spec.type == nullptr) {
      return error(TRITONSERVER_ERROR_UNSUPPORTED, format("the program's %s %zu (%s) has a dtype (%d) Triton cannot carry",
                                                          kind, i, spec.name.c_str(), static_cast<int>(info->scalar_type())));
    }
    spec.planned = info->is_memory_planned();
    std::uint64_t elements = 1;
    for (auto d : info->sizes()) {
      spec.dims.push_back(d);
      elements *= static_cast<std::uint64_t>(d);
    }
    spec.bytes = static_cast<std::size_t>(elements) * spec.type->size;
    out.push_back(std::move(spec));
  }
  return nullptr;
}

// The config's inputs or outputs against the program's: the same count, names (by position where the
// program's are generated), data types and dims; or, where the config gives none and auto-complete is
// on, the program's written into it.
TRITONSERVER_Error* check_io(Json& config, const char* key, std::vector<IoSpec>& program, bool autocomplete,
                             bool& changed) {
  const char* kind = std::strcmp(key, "input") == 0 ? "input" : "output";
  auto it = config.find(key);
  const bool given = it != config.end() && it->is_array() && !it->empty();
  if (!given) {
    if (!autocomplete) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("the config gives no %ss and auto-complete is off; the program has %zu: %s", kind,
                          program.size(), program.empty() ? "" : program[0].name.c_str()));
    }
    Json list = Json::array();
    for (const IoSpec& spec : program) {
      Json dims = Json::array();
      for (auto d : spec.dims) dims.push_back(d);
      list.push_back({{"name", spec.name}, {"data_type", spec.type->config}, {"dims", dims}});
    }
    config[key] = list;
    changed = true;
    return nullptr;
  }
  if (it->size() != program.size()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("the config gives %zu %ss; the program's method has %zu",
                                                        it->size(), kind, program.size()));
  }
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Json& entry = (*it)[i];
    IoSpec& spec = program[i];
    const std::string name = entry.value("name", std::string());
    const bool generated = spec.name == format("%s_%zu", kind, i);
    if (!generated && name != spec.name) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s %zu is '%s' in the config and '%s' in the program", kind,
                                                          i, name.c_str(), spec.name.c_str()));
    }
    if (name.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s %zu of the config has no name", kind, i));
    spec.name = name;  // the config's name, where the program's is generated
    const std::string type = entry.value("data_type", std::string());
    if (type != spec.type->config) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("%s '%s' is %s in the config; the program takes %s", kind,
                                                          name.c_str(), type.c_str(), spec.type->config));
    }
    std::vector<std::int64_t> dims;
    if (entry.contains("dims") && entry["dims"].is_array()) {
      for (const Json& d : entry["dims"]) {
        std::int64_t v = 0;
        TRTET_TRITON_RETURN_IF_ERROR(get_int(d, format("a dim of %s '%s'", kind, name.c_str()), v));
        dims.push_back(v);
      }
    }
    if (dims != spec.dims) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("%s '%s' has dims %s in the config; the program's are %s (the backend serves the program's "
                          "shapes as they are)",
                          kind, name.c_str(), dims_text(dims).c_str(), dims_text(spec.dims).c_str()));
    }
  }
  return nullptr;
}

TRITONSERVER_Error* read_config(TRITONBACKEND_Model* model, Json& config) {
  TRITONSERVER_Message* message = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  if (e == nullptr) {
    config = Json::parse(base, base + size, nullptr, false);
    if (config.is_discarded()) e = error(TRITONSERVER_ERROR_INTERNAL, "the server's model config is not JSON");
  }
  TRITONSERVER_Error* d = TRITONSERVER_MessageDelete(message);
  if (d != nullptr) TRITONSERVER_ErrorDelete(d);
  return e;
}

int device_count(std::string& why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    why = format("cudaGetDeviceCount: %s", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
  }
  if (count == 0) why = "no CUDA device";
  return count;
}

// The KIND_GPU instances the config makes, each with its device and partition size.
TRITONSERVER_Error* read_instances(const Json& config, const Parameters& params, int gpus, ModelState& state) {
  auto it = config.find("instance_group");
  if (it == config.end() || !it->is_array() || it->empty()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, "the config has no instance_group");
  }
  std::set<std::string> groups;
  for (const Json& group : *it) {
    const std::string name = group.value("name", std::string());
    const std::string kind = group.value("kind", std::string("KIND_GPU"));
    groups.insert(name);
    if (kind != "KIND_GPU") {
      return error(TRITONSERVER_ERROR_UNSUPPORTED,
                   format("instance group '%s' is %s; a .pte program with TensorRT delegates runs on a GPU only: use "
                          "KIND_GPU",
                          name.c_str(), kind.c_str()));
    }
    std::int64_t count = 1;
    if (group.contains("count")) TRTET_TRITON_RETURN_IF_ERROR(get_int(group["count"], "instance group count", count));
    if (count < 1 || count > 64) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("instance group '%s' has count %lld; the backend takes 1 to 64", name.c_str(),
                          static_cast<long long>(count)));
    }
    std::vector<int> devices;
    if (group.contains("gpus") && group["gpus"].is_array() && !group["gpus"].empty()) {
      for (const Json& g : group["gpus"]) {
        std::int64_t d = 0;
        TRTET_TRITON_RETURN_IF_ERROR(get_int(g, "a gpus entry", d));
        if (d < 0 || d >= gpus) {
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("instance group '%s' names GPU %lld; this machine has %d GPU%s (0 to %d)", name.c_str(),
                              static_cast<long long>(d), gpus, gpus == 1 ? "" : "s", gpus - 1));
        }
        devices.push_back(static_cast<int>(d));
      }
    } else {
      for (int d = 0; d < gpus; ++d) devices.push_back(d);
    }
    unsigned sms = 0;
    auto group_sms = params.group_sms.find(name);
    if (group_sms != params.group_sms.end()) {
      sms = group_sms->second;
    } else if (params.sms.has_value()) {
      sms = *params.sms;
    }
    for (int d : devices) {
      for (std::int64_t k = 0; k < count; ++k) state.places.push_back({name, d, sms, std::string(), -1, false});
    }
  }
  for (const auto& [group, sms] : params.group_sms) {
    if (groups.count(group) == 0) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter 'sms.%s' names no instance group of this model", group.c_str()));
    }
  }
  return nullptr;
}

std::string read_file_text(const std::string& path, std::string& why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    why = format("cannot open %s: %s", path.c_str(), std::strerror(errno));
    return {};
  }
  std::string text;
  char buffer[65536];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
    text.append(buffer, n);
    if (text.size() > (1u << 20)) {
      why = format("%s is larger than 1 MiB", path.c_str());
      std::fclose(f);
      return {};
    }
  }
  std::fclose(f);
  return text;
}

std::string split_message(const et::Error& e) {
  std::string text = e.message();
  if (!e.closest_valid().empty()) {
    text += " (closest request the GPU accepts:";
    for (unsigned v : e.closest_valid()) text += " " + std::to_string(v);
    text += ")";
  }
  return text;
}

// Reads and checks every plan file the parameters name (no GPU needed): a missing file or a plan that
// does not parse is refused here, on any machine.
TRITONSERVER_Error* read_plans(ModelState& state, const std::string& model_dir) {
  std::vector<std::string> names;
  if (state.parameters.plan_file.has_value()) names.push_back(*state.parameters.plan_file);
  for (const auto& [device, name] : state.parameters.device_plan_file) names.push_back(name);
  for (const std::string& name : names) {
    if (state.plans.count(name) != 0) continue;
    std::filesystem::path path(name);
    if (path.is_relative()) path = std::filesystem::path(model_dir) / path;
    std::string why;
    std::string text = read_file_text(path.string(), why);
    if (!why.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, "plan_file: " + why);
    // A one-device plan ("trtet-partition-plan") or a plan for several GPUs ("trtet-partition-plans").
    auto plans = et::parse_partition_plans(text);
    if (!plans.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("plan file %s: %s", path.c_str(), plans.error().message().c_str()));
    }
    state.plans[name] = ModelState::Plan{path.string(), std::move(text), std::move(*plans)};
  }
  return nullptr;
}

// Every several-GPU plan file the model names, against the whole machine before any split: the
// machine has every GPU the file names (checked with the device count alone, so a machine with no
// GPU hears the file's reason), and each of those GPUs has the shape its plan was made on.
TRITONSERVER_Error* check_device_plans(const ModelState& state, int gpus, const std::string& why) {
  for (const auto& [name, read] : state.plans) {
    if (read.plans.one_device()) continue;
    std::vector<et::PlanGpu> machine(static_cast<std::size_t>(gpus));
    if (read.plans.devices.back().device < gpus) {
      for (const et::DevicePartitionPlan& d : read.plans.devices) {
        auto gpu = et::plan_gpu(d.device);
        if (!gpu.ok()) {
          return error(triton_code(gpu.error().code()),
                       format("plan file %s: reading GPU %d: %s", read.path.c_str(), d.device, gpu.error().message().c_str()));
        }
        machine[static_cast<std::size_t>(d.device)] = std::move(*gpu);
      }
    }
    auto checked = et::check_partition_plans(read.plans, machine);
    if (!checked.ok()) {
      return error(gpus == 0 ? TRITONSERVER_ERROR_UNSUPPORTED : TRITONSERVER_ERROR_INVALID_ARG,
                   format("plan file %s: %s%s", read.path.c_str(), split_message(checked.error()).c_str(),
                          gpus == 0 ? (" (" + why + ")").c_str() : ""));
    }
  }
  return nullptr;
}

// Takes (or makes) each device's split for the model's instances.
TRITONSERVER_Error* acquire_partitions(ModelState& state) {
  std::map<int, std::vector<InstancePlace*>> by_device;
  for (InstancePlace& place : state.places) by_device[place.device].push_back(&place);
  const Parameters& params = state.parameters;
  for (auto& [device, places] : by_device) {
    std::optional<std::string> plan_path;
    if (auto p = params.device_plan_file.find(device); p != params.device_plan_file.end()) {
      plan_path = p->second;
    } else if (params.plan_file.has_value()) {
      plan_path = params.plan_file;
    }
    if (plan_path.has_value()) {
      const ModelState::Plan& read = state.plans.at(*plan_path);
      const std::filesystem::path path(read.path);
      const std::string& text = read.text;
      const et::PartitionPlan* plan = read.plans.find(device);
      if (plan == nullptr) {
        std::string named;
        for (int d : read.plans.device_indices()) named += (named.empty() ? "" : ", ") + std::to_string(d);
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("plan file %s has no plan for GPU %d, where model '%s' has instances (it has plans for "
                            "GPU%s %s)",
                            path.c_str(), device, state.name.c_str(), named.find(',') == std::string::npos ? "" : "s",
                            named.c_str()));
      }
      // The partitions this model's instances on this device take: one by the partition's name, or
      // <name>_<k> for each of several.
      for (std::size_t k = 0; k < places.size(); ++k) {
        places[k]->plan_partition = places.size() == 1 ? params.plan_partition : format("%s_%zu", params.plan_partition.c_str(), k);
        bool found = plan->remainder_name == places[k]->plan_partition;
        for (const auto& part : plan->partitions) found = found || part.name == places[k]->plan_partition;
        if (!found) {
          std::string names;
          for (const auto& part : plan->partitions) names += (names.empty() ? "" : ", ") + part.name;
          if (!plan->remainder_name.empty()) names += ", " + plan->remainder_name + " (the remainder)";
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("plan file %s has no partition '%s' for instance %zu on GPU %d (it has %s)", path.c_str(),
                              places[k]->plan_partition.c_str(), k, device, names.c_str()));
        }
      }
      std::lock_guard<std::mutex> lock(g_splits_mutex);
      std::shared_ptr<DeviceSplit> split;
      auto existing = g_splits.find(device);
      if (existing != g_splits.end()) {
        split = existing->second;
        if (split->plan_text != text || split->plan_text.empty()) {
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("GPU %d is already split by %s; one split per device: every model on it must name the "
                              "same plan file (a second split would share SMs)",
                              device, split->owner.c_str()));
        }
      } else {
        auto parts = et::apply_partition_plan(device, *plan);
        if (!parts.ok()) {
          return error(triton_code(parts.error().code()),
                       format("plan file %s on GPU %d: %s", path.c_str(), device, split_message(parts.error()).c_str()));
        }
        split = std::make_shared<DeviceSplit>();
        split->device = device;
        split->owner = "plan " + path.string();
        split->plan_text = text;
        split->planned = std::move(*parts);
        g_splits[device] = split;
      }
      for (InstancePlace* place : places) {
        auto taken = split->taken.find(place->plan_partition);
        if (taken != split->taken.end()) {
          if (split->models == 0) g_splits.erase(device);
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("partition '%s' of the plan on GPU %d is already taken by %s",
                              place->plan_partition.c_str(), device, taken->second.c_str()));
        }
      }
      for (InstancePlace* place : places) {
        split->taken[place->plan_partition] = format("model '%s'", state.name.c_str());
        state.partitions_taken[device].push_back(place->plan_partition);
      }
      ++split->models;
      state.splits[device] = split;
      continue;
    }
    std::vector<unsigned> counts;
    for (InstancePlace* place : places) {
      if (place->sms != 0) {
        place->partition_index = static_cast<int>(counts.size());
        counts.push_back(place->sms);
      }
    }
    if (counts.empty()) continue;  // whole GPU
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    auto existing = g_splits.find(device);
    if (existing != g_splits.end()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("GPU %d is already split by %s; one split per device: give every model's partition in one "
                          "plan file (plan_file) instead of sms",
                          device, existing->second->owner.c_str()));
    }
    auto parts = et::split_device(device, counts, et::Remainder::kDrop);
    if (!parts.ok()) {
      std::string asked;
      for (unsigned c : counts) asked += (asked.empty() ? "" : ", ") + std::to_string(c);
      return error(triton_code(parts.error().code()),
                   format("partitions of %s SMs on GPU %d: %s", asked.c_str(), device, split_message(parts.error()).c_str()));
    }
    auto split = std::make_shared<DeviceSplit>();
    split->device = device;
    split->owner = format("model '%s' (sms)", state.name.c_str());
    split->own = std::move(*parts);
    split->models = 1;
    g_splits[device] = split;
    state.splits[device] = split;
  }
  return nullptr;
}

TRITONSERVER_Error* initialize_model(TRITONBACKEND_Model* model, ModelState& state) {
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  state.name = name;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &state.version));
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &artifact, &location));
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED, "the model's files are not on a filesystem");
  }
  Json config;
  TRTET_TRITON_RETURN_IF_ERROR(read_config(model, config));

  // 1. Parameters.
  TRTET_TRITON_RETURN_IF_ERROR(parse_parameters(config, state.name, state.parameters));

  // 2. The program file: <version>/<default_model_filename or model.pte>, a plain file name.
  std::string file = config.value("default_model_filename", std::string());
  if (file.empty()) file = "model.pte";
  if (file.find('/') != std::string::npos || file == "." || file == "..") {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("default_model_filename '%s' is not a file name of the version's directory", file.c_str()));
  }
  const std::string version_dir = std::string(location) + "/" + std::to_string(state.version);
  state.program_path = version_dir + "/" + file;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(state.program_path, ec)) {
    return error(TRITONSERVER_ERROR_NOT_FOUND,
                 format("model '%s' version %llu has no program: %s is missing (a model is <name>/<version>/%s)",
                        state.name.c_str(), static_cast<unsigned long long>(state.version), state.program_path.c_str(),
                        file.c_str()));
  }
  std::int64_t max_batch = 0;
  if (config.contains("max_batch_size")) TRTET_TRITON_RETURN_IF_ERROR(get_int(config["max_batch_size"], "max_batch_size", max_batch));
  if (max_batch != 0) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("max_batch_size is %lld; the backend serves the program's shapes as they are: set 0 and give "
                        "the batch dimension in dims",
                        static_cast<long long>(max_batch)));
  }

  // 3. The method's metadata (no GPU needed): inputs and outputs checked or auto-completed.
  {
    take_executorch_errors();
    Module module(state.program_path, Module::LoadMode::File);
    const etr::Error loaded = module.load();
    if (loaded != etr::Error::Ok) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("loading the program " + state.program_path, loaded));
    }
    auto meta = module.method_meta(state.parameters.method);
    if (!meta.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   executorch_failure("the program has no method '" + state.parameters.method + "'", meta.error()));
    }
    TRTET_TRITON_RETURN_IF_ERROR(read_io(*meta, true, state.inputs));
    TRTET_TRITON_RETURN_IF_ERROR(read_io(*meta, false, state.outputs));
  }
  bool autocomplete = false;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelAutoCompleteConfig(model, &autocomplete));
  bool changed = false;
  TRTET_TRITON_RETURN_IF_ERROR(check_io(config, "input", state.inputs, autocomplete, changed));
  TRTET_TRITON_RETURN_IF_ERROR(check_io(config, "output", state.outputs, autocomplete, changed));
  if (changed) {
    if (!config.contains("max_batch_size")) config["max_batch_size"] = 0;
    const std::string text = config.dump();
    TRITONSERVER_Message* message = nullptr;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()));
    TRITONSERVER_Error* e = TRITONBACKEND_ModelSetConfig(model, 1, message);
    TRITONSERVER_Error* d = TRITONSERVER_MessageDelete(message);
    if (d != nullptr) TRITONSERVER_ErrorDelete(d);
    if (e != nullptr) return e;
    log(TRITONSERVER_LOG_INFO, format("model '%s': inputs and outputs auto-completed from the program", state.name.c_str()));
  }

  TRTET_TRITON_RETURN_IF_ERROR(read_plans(state, location));

  // 4. The GPU.
  std::string why;
  const int gpus = device_count(why);
  TRTET_TRITON_RETURN_IF_ERROR(check_device_plans(state, gpus, why));
  if (gpus == 0) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("model '%s' needs a CUDA GPU and this machine has none usable (%s): a .pte program with "
                        "TensorRT delegates runs on a GPU only",
                        state.name.c_str(), why.c_str()));
  }
  for (const auto& [device, path] : state.parameters.device_plan_file) {
    if (device >= gpus) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter 'plan_file.%d' names GPU %d; this machine has %d GPU%s", device, device, gpus,
                          gpus == 1 ? "" : "s"));
    }
  }

  // 5. Instance groups, then 6. partitions.
  TRTET_TRITON_RETURN_IF_ERROR(read_instances(config, state.parameters, gpus, state));
  TRTET_TRITON_RETURN_IF_ERROR(acquire_partitions(state));
  return nullptr;
}

// ---- an instance ----

struct InstanceState {
  ModelState* model = nullptr;
  std::string name;
  int device = 0;
  et::GreenContext* partition = nullptr;  // null: the whole GPU
  cudaStream_t stream = nullptr;
  bool own_stream = false;
  std::unique_ptr<Module> module;
  GpuTimes* gpu_times = nullptr;  // the Module's tracer (it owns it); null without the server's metrics
  InstanceMetrics metrics;
  std::vector<unsigned char> host_scratch;  // inputs given in pieces, or on the GPU for a planned input

  ~InstanceState() {
    module.reset();
    if (own_stream && stream != nullptr) {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    }
  }
};

// The group an instance belongs to: its name is <group>_<k> (or the group's name itself).
std::string group_of(const std::string& instance, const ModelState& model) {
  for (const InstancePlace& place : model.places) {
    if (place.group == instance) return place.group;
  }
  const std::size_t cut = instance.find_last_of('_');
  if (cut != std::string::npos && instance.find_first_not_of("0123456789", cut + 1) == std::string::npos) {
    return instance.substr(0, cut);
  }
  return instance;
}

TRITONSERVER_Error* initialize_instance(TRITONBACKEND_ModelInstance* instance, ModelState& model, InstanceState& state) {
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  state.name = name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_AUTO;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("instance '%s' is not KIND_GPU; a .pte program with TensorRT delegates runs on a GPU only", name));
  }
  std::int32_t device = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device));
  state.device = device;
  std::string why;
  const int gpus = device_count(why);
  if (device < 0 || device >= gpus) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("instance '%s' is on GPU %d; this machine has %d GPU%s", name, device, gpus, gpus == 1 ? "" : "s"));
  }
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("cudaSetDevice(%d): %s", device, cudaGetErrorString(set)));

  // The instance's place: the next one of its group on its device not yet taken.
  const std::string group = group_of(state.name, model);
  InstancePlace* place = nullptr;
  {
    std::lock_guard<std::mutex> lock(model.mutex);
    for (InstancePlace& p : model.places) {
      if (!p.taken && p.group == group && p.device == device) {
        place = &p;
        break;
      }
    }
    if (place == nullptr) {
      return error(TRITONSERVER_ERROR_INTERNAL,
                   format("instance '%s' (group '%s', GPU %d) has no place in the config's instance groups", name,
                          group.c_str(), device));
    }
    place->taken = true;
  }
  auto split = model.splits.find(device);
  if (split != model.splits.end()) {
    std::lock_guard<std::mutex> lock(g_splits_mutex);  // GreenContext::make_stream: one thread at a time
    DeviceSplit& s = *split->second;
    if (!place->plan_partition.empty()) {
      state.partition = s.planned.find(place->plan_partition);
    } else if (place->partition_index >= 0) {
      state.partition = &s.own[static_cast<std::size_t>(place->partition_index)];
    }
    if (state.partition != nullptr) {
      auto stream = state.partition->make_stream();
      if (!stream.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "a stream on the partition: " + stream.error().message());
      state.stream = *stream;
    }
  }
  if (state.stream == nullptr) {
    const cudaError_t made = cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking);
    if (made != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("cudaStreamCreate: %s", cudaGetErrorString(made)));
    state.own_stream = true;
  }

  // The instance's own Module and method, loaded with the model's load-time options.
  take_executorch_errors();
  std::unique_ptr<GpuTimes> tracer;
  if (have_metrics()) {
    TRITONSERVER_Error* made = state.metrics.make(model.name, model.version, state.name, device);
    if (made == nullptr) {
      tracer = std::make_unique<GpuTimes>();
      state.gpu_times = tracer.get();
    } else {
      log(TRITONSERVER_LOG_WARN, format("instance '%s': engine GPU time not reported: %s", name, TRITONSERVER_ErrorMessage(made)));
      TRITONSERVER_ErrorDelete(made);
    }
  }
  state.module = std::make_unique<Module>(model.program_path, Module::LoadMode::File, std::move(tracer));
  etr::BackendOptions<8> options;
  for (const auto& option : model.parameters.load_options) {
    const std::string& key = option.first;
    const std::string& value = option.second;
    etr::Error e = etr::Error::InvalidArgument;
    // BackendOptions takes its keys as literals: each key parse_parameters accepts, by name.
    auto set = [&](const auto& literal) {
      if (value == "true" || value == "false") return options.set_option(literal, value == "true");
      if (!value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos) {
        return options.set_option(literal, std::stoi(value));
      }
      return options.set_option(literal, value.c_str());
    };
    if (key == "use_cuda_graphs") e = set("use_cuda_graphs");
    if (key == "cuda_graph_cache_size") e = set("cuda_graph_cache_size");
    if (key == "staging_budget_mb") e = set("staging_budget_mb");
    if (key == "weight_streaming_budget") e = set("weight_streaming_budget");
    if (e != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("load option " + key, e));
  }
  etr::LoadBackendOptionsMap map;
  etr::Error e = map.set_options("TensorRTBackend", options.view());
  if (e == etr::Error::Ok) e = state.module->load(map);
  if (e == etr::Error::Ok) {
    et::CudaStreamGuard guard(state.stream);
    e = state.module->load_method(model.parameters.method);
  }
  if (e != etr::Error::Ok) {
    return error(e == etr::Error::InvalidArgument ? TRITONSERVER_ERROR_INVALID_ARG : TRITONSERVER_ERROR_INTERNAL,
                 executorch_failure(format("model '%s' instance '%s': loading method '%s'", model.name.c_str(), name,
                                           model.parameters.method.c_str()),
                                    e));
  }
  log(TRITONSERVER_LOG_INFO,
      format("model '%s' instance '%s' on GPU %d, %s", model.name.c_str(), name, device,
             state.partition != nullptr
                 ? format("a green-context partition of %u SMs%s", state.partition->sm_count(),
                          place->plan_partition.empty() ? "" : (" (plan partition '" + place->plan_partition + "')").c_str())
                       .c_str()
                 : "the whole GPU (no partition asked for)"));
  return nullptr;
}

// ---- execute ----

::executorch::aten::Device device_of(TRITONSERVER_MemoryType type, std::int64_t id) {
  if (type == TRITONSERVER_MEMORY_GPU) {
    return ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                      static_cast<::executorch::runtime::etensor::DeviceIndex>(id));
  }
  return ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
}

std::vector<::executorch::aten::SizesType> sizes_of(const std::vector<std::int64_t>& dims) {
  return std::vector<::executorch::aten::SizesType>(dims.begin(), dims.end());
}

// One request, start to end: inputs bound in place (or staged by the delegate from host memory),
// outputs written into the response's buffers, the call on the instance's stream under the guard.
TRITONSERVER_Error* run_request(InstanceState& state, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                std::uint64_t& compute_start, std::uint64_t& compute_end) {
  ModelState& model = *state.model;
  std::vector<TensorPtr> keep;  // the tensors the method reads and writes, alive until the call is done
  keep.reserve(model.inputs.size() + model.outputs.size());
  std::vector<std::pair<std::size_t, std::pair<void*, TRITONSERVER_MemoryType>>> planned_outputs;

  std::uint32_t input_count = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &input_count));
  if (input_count != model.inputs.size()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("the request has %u inputs; model '%s' takes %zu", input_count, model.name.c_str(), model.inputs.size()));
  }
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const IoSpec& spec = model.inputs[i];
    TRITONBACKEND_Input* input = nullptr;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, spec.name.c_str(), &input));
    const char* input_name = nullptr;
    TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
    const std::int64_t* shape = nullptr;
    std::uint32_t dims = 0;
    std::uint64_t bytes = 0;
    std::uint32_t buffers = 0;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, &input_name, &type, &shape, &dims, &bytes, &buffers));
    if (type != spec.type->triton || std::vector<std::int64_t>(shape, shape + dims) != spec.dims || bytes != spec.bytes) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("input '%s' is %s %s (%llu bytes); the program takes %s %s", spec.name.c_str(),
                          type == spec.type->triton ? spec.type->config : "another type",
                          dims_text(std::vector<std::int64_t>(shape, shape + dims)).c_str(),
                          static_cast<unsigned long long>(bytes), spec.type->config, dims_text(spec.dims).c_str()));
    }
    const void* data = nullptr;
    std::uint64_t data_bytes = 0;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
    std::int64_t memory_id = state.device;
    if (buffers == 1) {
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, 0, &data, &data_bytes, &memory, &memory_id));
    }
    if (memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("input '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                          static_cast<long long>(memory_id), state.name.c_str(), state.device));
    }
    // In pieces, or on the GPU for an input the program plans in host memory: gathered into host memory.
    if (buffers != 1 || (spec.planned && memory == TRITONSERVER_MEMORY_GPU)) {
      state.host_scratch.resize(spec.bytes);
      std::size_t offset = 0;
      for (std::uint32_t b = 0; b < buffers; ++b) {
        const void* piece = nullptr;
        std::uint64_t piece_bytes = 0;
        TRITONSERVER_MemoryType piece_memory = TRITONSERVER_MEMORY_CPU;
        std::int64_t piece_id = 0;
        TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &piece, &piece_bytes, &piece_memory, &piece_id));
        if (piece_bytes > spec.bytes - offset) {
          return error(TRITONSERVER_ERROR_INVALID_ARG, format("input '%s' has more bytes than its shape", spec.name.c_str()));
        }
        const cudaError_t c = cudaMemcpy(state.host_scratch.data() + offset, piece, piece_bytes, cudaMemcpyDefault);
        if (c != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("gathering input '%s': %s", spec.name.c_str(), cudaGetErrorString(c)));
        offset += piece_bytes;
      }
      data = state.host_scratch.data();
      memory = TRITONSERVER_MEMORY_CPU;
    }
    keep.push_back(::executorch::extension::from_blob(const_cast<void*>(data), sizes_of(spec.dims), spec.type->et,
                                                      device_of(memory, memory_id)));
    const etr::Error set = state.module->set_input(model.parameters.method, etr::EValue(*keep.back()), i);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting input '" + spec.name + "'", set));
  }

  // Outputs: the ones the client asked for (all when it named none), each into its response buffer.
  std::uint32_t requested = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &requested));
  std::set<std::string> wanted;
  for (std::uint32_t r = 0; r < requested; ++r) {
    const char* output_name = nullptr;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, r, &output_name));
    wanted.insert(output_name);
  }
  std::vector<std::pair<void*, TRITONSERVER_MemoryType>> destinations(model.outputs.size(), {nullptr, TRITONSERVER_MEMORY_CPU});
  for (std::size_t o = 0; o < model.outputs.size(); ++o) {
    const IoSpec& spec = model.outputs[o];
    void* buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
    std::int64_t memory_id = state.device;
    if (wanted.empty() || wanted.count(spec.name) != 0) {
      TRITONBACKEND_Output* output = nullptr;
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, spec.name.c_str(), spec.type->triton,
                                                                spec.dims.data(), static_cast<std::uint32_t>(spec.dims.size())));
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, spec.bytes, &memory, &memory_id));
      if (memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("output '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                            static_cast<long long>(memory_id), state.name.c_str(), state.device));
      }
      destinations[o] = {buffer, memory};
    }
    if (spec.planned) continue;  // the program's own memory: copied out below
    if (buffer == nullptr) {
      // Not asked for: the program still writes it, into a scratch the response never sees.
      state.host_scratch.resize(std::max(state.host_scratch.size(), spec.bytes));
      buffer = state.host_scratch.data();
      memory = TRITONSERVER_MEMORY_CPU;
    }
    keep.push_back(::executorch::extension::from_blob(buffer, sizes_of(spec.dims), spec.type->et, device_of(memory, memory_id)));
    const etr::Error set = state.module->set_output(model.parameters.method, etr::EValue(*keep.back()), o);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting output '" + spec.name + "'", set));
  }

  compute_start = now_ns();
  take_executorch_errors();
  if (state.gpu_times != nullptr) state.gpu_times->reset();
  std::optional<etr::Result<std::vector<etr::EValue>>> called;
  {
    et::CudaStreamGuard guard(state.stream);
    called.emplace(state.module->execute(model.parameters.method));
  }
  etr::Result<std::vector<etr::EValue>>& result = *called;
  if (!result.ok()) {
    (void)cudaStreamSynchronize(state.stream);
    (void)cudaGetLastError();
    // The delegate refuses what the caller got wrong (a shape outside its engine's profile) as
    // InvalidArgument: the client sees that code, with the delegate's message from its log.
    const TRITONSERVER_Error_Code code =
        result.error() == etr::Error::InvalidArgument ? TRITONSERVER_ERROR_INVALID_ARG : TRITONSERVER_ERROR_INTERNAL;
    return error(code, executorch_failure(format("model '%s' instance '%s': execute", model.name.c_str(), state.name.c_str()), result.error()));
  }
  for (std::size_t o = 0; o < model.outputs.size(); ++o) {
    if (!model.outputs[o].planned || destinations[o].first == nullptr) continue;
    if (o >= result->size() || !(*result)[o].isTensor()) {
      return error(TRITONSERVER_ERROR_INTERNAL, format("output %zu is not a tensor", o));
    }
    const auto& tensor = (*result)[o].toTensor();
    if (tensor.nbytes() != model.outputs[o].bytes) {
      return error(TRITONSERVER_ERROR_INTERNAL, format("output '%s' has %zu bytes; %zu expected", model.outputs[o].name.c_str(), tensor.nbytes(), model.outputs[o].bytes));
    }
    const cudaError_t c = cudaMemcpyAsync(destinations[o].first, tensor.const_data_ptr(), tensor.nbytes(), cudaMemcpyDefault, state.stream);
    if (c != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("copying output '%s': %s", model.outputs[o].name.c_str(), cudaGetErrorString(c)));
  }
  const cudaError_t synced = cudaStreamSynchronize(state.stream);
  compute_end = now_ns();
  if (synced != cudaSuccess) {
    return error(TRITONSERVER_ERROR_INTERNAL, format("model '%s' instance '%s': the call's stream failed: %s",
                                                     model.name.c_str(), state.name.c_str(), cudaGetErrorString(synced)));
  }
  // The call's GPU work is done: its engine and staging times are known (Note [engine GPU time]).
  if (state.gpu_times != nullptr) {
    auto pending = et::flush_profiling(state.gpu_times);
    if (pending.ok() && *pending == 0 && state.gpu_times->engine_spans() > 0) {
      state.metrics.add(state.gpu_times->engine_ns(), state.gpu_times->staging_ns());
    }
  }
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != kTritonBackendApiMajor || minor < kTritonBackendApiMinor) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("built for the backend API %u.%u; this server offers %u.%u", kTritonBackendApiMajor,
                        kTritonBackendApiMinor, major, minor));
  }
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  etr::register_pal(etr::PalImpl::create(&executorch_log, __FILE__));
  etr::runtime_init();
  make_metric_families();
  log(TRITONSERVER_LOG_INFO, format("backend '%s' ready (backend API %u.%u; runtime %s)", name, major, minor,
                                    "torchtrt-executorch " TRTET_TRITON_VERSION));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) {
  delete_metric_families();  // every instance (and its series) is finalized before the backend
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  auto state = std::make_unique<ModelState>();
  TRITONSERVER_Error* e = nullptr;
  try {
    e = initialize_model(model, *state);
  } catch (const std::exception& ex) {
    e = error(TRITONSERVER_ERROR_INTERNAL, std::string("loading the model: ") + ex.what());
  }
  if (e != nullptr) return e;  // the state (and any split it holds) goes with it
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelSetState(model, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  delete static_cast<ModelState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  TRITONBACKEND_Model* model = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* model_state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &model_state));
  auto state = std::make_unique<InstanceState>();
  state->model = static_cast<ModelState*>(model_state);
  TRITONSERVER_Error* e = nullptr;
  try {
    e = initialize_instance(instance, *state->model, *state);
  } catch (const std::exception& ex) {
    e = error(TRITONSERVER_ERROR_INTERNAL, std::string("loading the instance: ") + ex.what());
  }
  if (e != nullptr) return e;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceSetState(instance, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  delete static_cast<InstanceState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, const std::uint32_t request_count) {
  const std::uint64_t exec_start = now_ns();
  void* raw = nullptr;
  // An error returned here (before any request is touched) leaves the requests the server's: it
  // answers and releases them. From the loop on, the backend owns every request and releases each.
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &raw));
  InstanceState& state = *static_cast<InstanceState*>(raw);
  (void)cudaSetDevice(state.device);
  std::uint64_t batch_compute_start = 0;
  std::uint64_t batch_compute_end = 0;
  std::uint64_t served = 0;
  // Every request gets its response and is released here, success or not: the backend owns them
  // once this function is called, and one request's failure leaves the instance serving the next.
  for (std::uint32_t r = 0; r < request_count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Response* response = nullptr;
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&response, request);
    std::uint64_t compute_start = now_ns();
    std::uint64_t compute_end = compute_start;
    if (e == nullptr) {
      try {
        e = run_request(state, request, response, compute_start, compute_end);
      } catch (const std::exception& ex) {
        e = error(TRITONSERVER_ERROR_INTERNAL, std::string("serving a request: ") + ex.what());
      } catch (...) {
        e = error(TRITONSERVER_ERROR_INTERNAL, "serving a request: an exception of unknown type");
      }
    }
    if (compute_end < compute_start) compute_end = compute_start;
    const bool ok = e == nullptr;
    if (response != nullptr) {
      // The response goes to the server; the error stays ours to free.
      TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, kTritonResponseCompleteFinal, e);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      e = nullptr;
      if (sent != nullptr) {
        log(TRITONSERVER_LOG_ERROR, std::string("sending a response: ") + TRITONSERVER_ErrorMessage(sent));
        TRITONSERVER_ErrorDelete(sent);
      }
    } else if (e != nullptr) {
      log(TRITONSERVER_LOG_ERROR, std::string("no response for a request: ") + TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
    const std::uint64_t exec_end = now_ns();
    TRITONSERVER_Error* stats =
        TRITONBACKEND_ModelInstanceReportStatistics(instance, request, ok, exec_start, compute_start, compute_end, exec_end);
    if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
    if (ok) {
      if (served == 0) batch_compute_start = compute_start;
      batch_compute_end = compute_end;
      ++served;
    }
    TRITONSERVER_Error* released = TRITONBACKEND_RequestRelease(request, kTritonRequestReleaseAll);
    if (released != nullptr) TRITONSERVER_ErrorDelete(released);
  }
  if (served > 0) {
    TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportBatchStatistics(
        instance, served, exec_start, batch_compute_start, batch_compute_end, now_ns());
    if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
  }
  return nullptr;
}

}  // extern "C"
