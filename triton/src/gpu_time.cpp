#include "gpu_time.h"

namespace trtet_triton {

// ---- the engine's GPU time (Note [engine GPU time], gpu_time.h) ----

namespace {

struct Metrics {
  TRITONSERVER_MetricFamily* engine_us = nullptr;
  TRITONSERVER_MetricFamily* staging_us = nullptr;
  TRITONSERVER_MetricFamily* requests = nullptr;
  TRITONSERVER_MetricFamily* phase_us = nullptr;
  TRITONSERVER_MetricFamily* phase_requests = nullptr;
};
Metrics g_metrics;  // made in TRITONBACKEND_Initialize, deleted in TRITONBACKEND_Finalize

}  // namespace

void delete_metric_families() {
  for (TRITONSERVER_MetricFamily** f : {&g_metrics.engine_us, &g_metrics.staging_us, &g_metrics.requests,
                                         &g_metrics.phase_us, &g_metrics.phase_requests}) {
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
      {&g_metrics.phase_us, "trtet_request_phase_duration_us",
       "Cumulative host time of successful requests in each phase of the backend (label phase: response_new, inputs, "
       "outputs, execute, stream_wait, late_outputs, send, release; and method, ExecuTorch's Method::execute "
       "within execute), in microseconds"},
      {&g_metrics.phase_requests, "trtet_request_phase_requests",
       "Successful requests whose phases are in trtet_request_phase_duration_us"},
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

TRITONSERVER_Error* InstanceMetrics::make(const std::string& model, std::uint64_t version, const std::string& instance,
                                           int gpu) {
  const std::string version_text = std::to_string(version);
  const std::string gpu_text = std::to_string(gpu);
  const std::pair<const char*, const char*> pairs[] = {
      {"model", model.c_str()}, {"version", version_text.c_str()}, {"instance", instance.c_str()}, {"gpu", gpu_text.c_str()}};
  std::vector<const TRITONSERVER_Parameter*> labels;
  for (const auto& [key, value] : pairs) labels.push_back(TRITONSERVER_ParameterNew(key, TRITONSERVER_PARAMETER_STRING, value));
  TRITONSERVER_Error* e = nullptr;
  const std::pair<TRITONSERVER_Metric**, TRITONSERVER_MetricFamily*> made[] = {
      {&engine_us, g_metrics.engine_us},
      {&staging_us, g_metrics.staging_us},
      {&requests, g_metrics.requests},
      {&phase_requests, g_metrics.phase_requests}};
  for (const auto& [metric, family] : made) {
    if (e == nullptr) e = TRITONSERVER_MetricNew(metric, family, labels.data(), labels.size());
  }
  for (std::size_t p = 0; p < kPhases && e == nullptr; ++p) {
    labels.push_back(TRITONSERVER_ParameterNew("phase", TRITONSERVER_PARAMETER_STRING, phase_name(static_cast<Phase>(p))));
    e = TRITONSERVER_MetricNew(&phase_us[p], g_metrics.phase_us, labels.data(), labels.size());
    TRITONSERVER_ParameterDelete(const_cast<TRITONSERVER_Parameter*>(labels.back()));
    labels.pop_back();
  }
  for (const TRITONSERVER_Parameter* label : labels) {
    TRITONSERVER_ParameterDelete(const_cast<TRITONSERVER_Parameter*>(label));
  }
  return e;
}

// ---- where a request's time goes (Note [request phases], request_phases.h) ----

void InstanceMetrics::add_phases(const RequestPoints& p) {
  if (phases_.add(p)) flush_phases();
}

void InstanceMetrics::flush_phases() {
  const PhaseFlush flush = phases_.take();
  if (flush.requests == 0) return;
  for (std::size_t i = 0; i < kPhases; ++i) increment(phase_us[i], flush.us[i]);
  increment(phase_requests, static_cast<double>(flush.requests));
}

}  // namespace trtet_triton
