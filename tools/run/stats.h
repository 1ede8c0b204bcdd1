// Latency statistics and the partition-sizing decision: pure functions, testable without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace trtet_run {

namespace ex = torch_tensorrt::executorch_backend;

/// The distribution of one run's per-call latencies (microseconds) and its rate.
struct LatencyStats {
  std::size_t calls = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double calls_per_s = 0;  ///< calls / the loop's wall time
};

/// Nearest-rank percentiles, max and mean of `samples_us`; `wall_s` the loop's wall time (0: not known).
LatencyStats summarize(std::vector<double> samples_us, double wall_s);

/// One point of a sweep: the partition's SMs (the whole GPU is a point too) and its latencies.
struct SweepPoint {
  unsigned sms = 0;
  bool whole_gpu = false;
  LatencyStats stats;
};

/// The smallest partition (whole_gpu points excluded) whose p99 is at most `p99_target_us`.
std::optional<SweepPoint> smallest_meeting(const std::vector<SweepPoint>& points, double p99_target_us);

/// "8:132:8" -> {8, 16, ..., 128}. kInvalidArgument naming the problem for anything else.
ex::Result<std::vector<unsigned>> parse_sm_range(const std::string& text);

/// The sweep as CSV: sms,whole_gpu,calls,p50_us,p90_us,p99_us,max_us,mean_us,calls_per_s.
std::string sweep_csv(const std::vector<SweepPoint>& points);

}  // namespace trtet_run
