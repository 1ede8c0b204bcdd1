// The engine's GPU time: the tracer that keeps the delegate's GPU durations of a request, and the
// Triton metrics they are added to (gpu_time.cpp makes the metric families).
#pragma once

#include <executorch/runtime/core/event_tracer.h>
#include <executorch/runtime/platform/platform.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <cstring>
#include <utility>
#include <vector>

#include "errors.h"
#include "metrics.h"
#include "request_phases.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

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
//   trtet_delegate_host_duration_us the delegate's calls on the host (its session's execute: checks,
//                                   queued work, and with host I/O the wait), from the host event it
//                                   logs for a timed call; with the timing's event records in it
//   trtet_engine_gpu_requests       how many requests those sums cover (the timed ones)
// Triton's own statistics (TRITONBACKEND_ModelInstanceReportStatistics) stay host times: compute_infer
// is the host time from before execute to after the stream synchronize (binding, execute, the GPU
// work, output copies). Those statistics take points on the host clock, and a GPU duration is none,
// so the GPU time is reported beside them, not folded into them. Where the server runs without
// metrics (--allow-metrics=false) the families cannot be made; then no tracer is attached and no call
// is timed (the delegate records no events).

void make_metric_families();
void delete_metric_families();
bool have_metrics();

// One instance's series of the counters.
struct InstanceMetrics {
  TRITONSERVER_Metric* engine_us = nullptr;
  TRITONSERVER_Metric* staging_us = nullptr;
  TRITONSERVER_Metric* delegate_host_us = nullptr;
  TRITONSERVER_Metric* requests = nullptr;
  TRITONSERVER_Metric* phase_us[kPhases] = {};
  TRITONSERVER_Metric* phase_requests = nullptr;

  ~InstanceMetrics() {
    flush_phases();
    for (TRITONSERVER_Metric** m : {&engine_us, &staging_us, &delegate_host_us, &requests, &phase_requests}) drop(*m);
    for (TRITONSERVER_Metric*& m : phase_us) drop(m);
  }

  TRITONSERVER_Error* make(const std::string& model, std::uint64_t version, const std::string& instance, int gpu);

  // A successful request's points (every point set): its phases added to the sums, flushed to the
  // counters every kPhaseFlushEvery requests.
  void add_phases(const RequestPoints& p);
  void flush_phases();

  void add(double engine_ns, double staging_ns, double delegate_host_ns) {
    for (const auto& [metric, value] : {std::pair<TRITONSERVER_Metric*, double>{engine_us, engine_ns / 1e3},
                                        {staging_us, staging_ns / 1e3},
                                        {delegate_host_us, delegate_host_ns / 1e3},
                                        {requests, 1.0}}) {
      increment(metric, value);
    }
  }

 private:
  PhaseSums phases_;
};

// An ExecuTorch EventTracer that keeps the delegate's GPU durations of the current request and
// nothing else (every other event is dropped).
class GpuTimes final : public etr::EventTracer {
 public:
  void reset() noexcept {
    engine_ns_ = 0;
    staging_ns_ = 0;
    delegate_ns_ = 0;
    engine_spans_ = 0;
  }
  double engine_ns() const noexcept { return engine_ns_; }
  // The delegate's calls on the host, from the host event a timed call logs (untimed calls, at
  // kProfileMethodOnly, log none).
  double delegate_ns() const noexcept { return delegate_ns_; }
  double staging_ns() const noexcept { return staging_ns_; }
  int engine_spans() const noexcept { return engine_spans_; }

  void log_profiling_delegate(const char*, etr::DelegateDebugIntId, et_timestamp_t start, et_timestamp_t end,
                              const void* metadata, size_t length) override {
    if (metadata == nullptr || length == 0) return;
    const std::string_view text(static_cast<const char*>(metadata), std::min<size_t>(length, 512));
    if (text.find(" kind=host") != std::string_view::npos) {
      // The delegate's call on the host; its ticks are ExecuTorch's PAL clock's.
      if (end >= start) delegate_ns_ += static_cast<double>(end - start) * ticks_to_ns();
      return;
    }
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

  // Method::execute's host time (Note [request phases]): ExecuTorch opens one event for it per
  // call, at every profiling level, and closes it with the entry returned here.
  std::uint64_t take_method_ns() noexcept {
    const std::uint64_t ns = method_ns_;
    method_ns_ = 0;
    return ns;
  }

  void create_event_block(const char*) override {}
  etr::EventTracerEntry start_profiling(const char* name, etr::ChainID, etr::DebugHandle) override {
    etr::EventTracerEntry entry{};
    if (name != nullptr && std::strcmp(name, "Method::execute") == 0) {
      entry.event_id = kMethodEvent;
      entry.start_time = static_cast<et_timestamp_t>(steady_ns());
    }
    return entry;
  }
  etr::EventTracerEntry start_profiling_delegate(const char*, etr::DelegateDebugIntId) override { return {}; }
  void end_profiling_delegate(etr::EventTracerEntry, const void*, size_t) override {}
  void end_profiling(etr::EventTracerEntry entry) override {
    if (entry.event_id != kMethodEvent) return;
    const std::uint64_t end = steady_ns();
    const auto start = static_cast<std::uint64_t>(entry.start_time);
    if (end >= start) method_ns_ += end - start;
  }
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
  static constexpr std::int64_t kMethodEvent = 0x7472746574;  // an id no ExecuTorch event takes here
  static std::uint64_t steady_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }

  static double ticks_to_ns() noexcept {
    const et_tick_ratio_t ratio = et_pal_ticks_to_ns_multiplier();
    return static_cast<double>(ratio.numerator) / static_cast<double>(ratio.denominator);
  }

  std::uint64_t method_ns_ = 0;
  double delegate_ns_ = 0;
  double engine_ns_ = 0;
  double staging_ns_ = 0;
  int engine_spans_ = 0;
};

}  // namespace trtet_triton
