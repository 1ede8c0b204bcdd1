#include "run/report.h"

#include <cstdio>

namespace trtet_run {

std::string table_header(const std::string& first, const std::string& last) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-30s %5s %9s %9s %9s %9s %10s %7s", first.c_str(), "SMs", "p50 (us)", "p90 (us)",
                "p99 (us)", "max (us)", "calls/s", "ran on");
  std::string text = line;
  if (!last.empty()) text += "  " + last;
  return text;
}

std::string table_row(const std::string& label, unsigned sms, const LatencyStats& s,
                      const std::optional<std::vector<int>>& ran_on, const std::string& last) {
  const std::string seen = ran_on ? std::to_string(ran_on->size()) : "-";
  char line[256];
  std::snprintf(line, sizeof(line), "%-30s %5u %9.1f %9.1f %9.1f %9.1f %10.0f %7s", label.c_str(), sms, s.p50_us,
                s.p90_us, s.p99_us, s.max_us, s.calls_per_s, seen.c_str());
  std::string text = line;
  if (!last.empty()) text += "  " + last;
  return text;
}

std::string format_ids(const std::vector<int>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ids[i]);
    if (j > i) text += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return text.empty() ? "(none)" : text;
}

std::string recommendation(const std::vector<SweepPoint>& points, double p99_target_us) {
  char text[512];
  const auto best = smallest_meeting(points, p99_target_us);
  if (best) {
    std::snprintf(text, sizeof(text),
                  "recommendation: %u SMs (p99 %.1f us <= target %.1f us; the smallest measured "
                  "partition that meets it)",
                  best->sms, best->stats.p99_us, p99_target_us);
    return text;
  }
  const SweepPoint* whole = nullptr;
  const SweepPoint* fastest = nullptr;
  for (const SweepPoint& p : points) {
    if (p.whole_gpu) whole = &p;
    if (!p.whole_gpu && (fastest == nullptr || p.stats.p99_us < fastest->stats.p99_us)) fastest = &p;
  }
  if (whole != nullptr && whole->stats.p99_us <= p99_target_us) {
    std::snprintf(text, sizeof(text),
                  "recommendation: no partition measured meets p99 <= %.1f us; only the whole GPU does (p99 %.1f us)",
                  p99_target_us, whole->stats.p99_us);
  } else {
    std::snprintf(text, sizeof(text),
                  "recommendation: none: p99 <= %.1f us is not met on any partition measured (best p99 %.1f us on "
                  "%u SMs) nor on the whole GPU",
                  p99_target_us, fastest ? fastest->stats.p99_us : 0.0, fastest ? fastest->sms : 0u);
  }
  return text;
}

}  // namespace trtet_run
