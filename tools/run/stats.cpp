#include "run/stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace trtet_run {
namespace {

// Nearest rank: the smallest sample with at least p of the samples at or below it.
double nearest_rank(const std::vector<double>& sorted, double p) {
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const std::size_t index = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

bool parse_unsigned(const std::string& text, unsigned& value) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

LatencyStats summarize(std::vector<double> samples_us, double wall_s) {
  LatencyStats stats;
  stats.calls = samples_us.size();
  if (samples_us.empty()) return stats;
  std::sort(samples_us.begin(), samples_us.end());
  stats.p50_us = nearest_rank(samples_us, 0.50);
  stats.p90_us = nearest_rank(samples_us, 0.90);
  stats.p99_us = nearest_rank(samples_us, 0.99);
  stats.max_us = samples_us.back();
  stats.mean_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / static_cast<double>(stats.calls);
  stats.calls_per_s = wall_s > 0 ? static_cast<double>(stats.calls) / wall_s : 0;
  return stats;
}

std::optional<SweepPoint> smallest_meeting(const std::vector<SweepPoint>& points, double p99_target_us) {
  std::optional<SweepPoint> best;
  for (const SweepPoint& p : points) {
    if (p.whole_gpu || p.stats.calls == 0 || p.stats.p99_us > p99_target_us) continue;
    if (!best || p.sms < best->sms) best = p;
  }
  return best;
}

ex::Result<std::vector<unsigned>> parse_sm_range(const std::string& text) {
  const auto first = text.find(':');
  const auto second = first == std::string::npos ? std::string::npos : text.find(':', first + 1);
  unsigned start = 0, end = 0, step = 0;
  if (second == std::string::npos || !parse_unsigned(text.substr(0, first), start) ||
      !parse_unsigned(text.substr(first + 1, second - first - 1), end) ||
      !parse_unsigned(text.substr(second + 1), step)) {
    return ex::make_error(ex::ErrorCode::kInvalidArgument,
                          "--sweep-sms wants FIRST:LAST:STEP in SMs, e.g. 8:132:8; got '%s'", text.c_str());
  }
  TRTET_CHECK_OR_RETURN(start > 0 && step > 0, kInvalidArgument,
                        "--sweep-sms %s: FIRST and STEP must be at least 1 SM", text.c_str());
  TRTET_CHECK_OR_RETURN(start <= end, kInvalidArgument, "--sweep-sms %s: FIRST is above LAST", text.c_str());
  std::vector<unsigned> counts;
  for (unsigned n = start; n <= end; n += step) {
    counts.push_back(n);
    if (end - n < step) break;  // no overflow past LAST
  }
  return counts;
}

std::string sweep_csv(const std::vector<SweepPoint>& points) {
  std::string csv = "sms,whole_gpu,calls,p50_us,p90_us,p99_us,max_us,mean_us,calls_per_s\n";
  char line[256];
  for (const SweepPoint& p : points) {
    std::snprintf(line, sizeof(line), "%u,%d,%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f\n", p.sms, p.whole_gpu ? 1 : 0,
                  p.stats.calls, p.stats.p50_us, p.stats.p90_us, p.stats.p99_us, p.stats.max_us, p.stats.mean_us,
                  p.stats.calls_per_s);
    csv += line;
  }
  return csv;
}

}  // namespace trtet_run
