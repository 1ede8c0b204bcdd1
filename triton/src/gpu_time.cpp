#include "gpu_time.h"

namespace trtet_triton {

// ---- the engine's GPU time (Note [engine GPU time], gpu_time.h) ----

namespace {

struct Metrics {
  TRITONSERVER_MetricFamily* engine_us = nullptr;
  TRITONSERVER_MetricFamily* staging_us = nullptr;
  TRITONSERVER_MetricFamily* delegate_host_us = nullptr;
  TRITONSERVER_MetricFamily* requests = nullptr;
  TRITONSERVER_MetricFamily* phase_us = nullptr;
  TRITONSERVER_MetricFamily* phase_requests = nullptr;
};
Metrics g_metrics;  // made in TRITONBACKEND_Initialize, deleted in TRITONBACKEND_Finalize

}  // namespace

void delete_metric_families() {
  for (TRITONSERVER_MetricFamily** f : {&g_metrics.engine_us, &g_metrics.staging_us, &g_metrics.delegate_host_us,
                                         &g_metrics.requests, &g_metrics.phase_us, &g_metrics.phase_requests}) {
    drop(*f);
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
      {&g_metrics.delegate_host_us, "trtet_delegate_host_duration_us",
       "Cumulative host time of the torchtrt_executorch delegate's calls in the requests whose GPU times are measured "
       "(their CUDA events included), in microseconds"},
      {&g_metrics.requests, "trtet_engine_gpu_requests",
       "Successful requests whose GPU times are in trtet_engine_gpu_duration_us and trtet_staging_gpu_duration_us, "
       "and whose delegate host time is in trtet_delegate_host_duration_us"},
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
  MetricLabels labels = {
      {"model", model}, {"version", std::to_string(version)}, {"instance", instance}, {"gpu", std::to_string(gpu)}};
  TRITONSERVER_Error* e = nullptr;
  const std::pair<TRITONSERVER_Metric**, TRITONSERVER_MetricFamily*> made[] = {
      {&engine_us, g_metrics.engine_us},
      {&staging_us, g_metrics.staging_us},
      {&delegate_host_us, g_metrics.delegate_host_us},
      {&requests, g_metrics.requests},
      {&phase_requests, g_metrics.phase_requests}};
  for (const auto& [metric, family] : made) {
    if (e == nullptr) e = new_series(metric, family, labels);
  }
  labels.emplace_back("phase", "");
  for (std::size_t p = 0; p < kPhases && e == nullptr; ++p) {
    labels.back().second = phase_name(static_cast<Phase>(p));
    e = new_series(&phase_us[p], g_metrics.phase_us, labels);
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
