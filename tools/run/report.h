// How trtet-run prints: latency tables, SM lists, the sweep's recommendation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run/stats.h"

namespace trtet_run {

/// The header of a latency table whose first column is titled `first`, with an optional last column.
std::string table_header(const std::string& first, const std::string& last = "");
/// One row: label, SMs, p50/p90/p99/max (us), calls/s, the SMs the engine ran on ("-" when not
/// observable), and an optional last column.
std::string table_row(const std::string& label, unsigned sms, const LatencyStats& stats,
                      const std::optional<std::vector<int>>& ran_on, const std::string& last = "");

/// "0-31, 64-95": sorted unique ids as ranges.
std::string format_ids(const std::vector<int>& ids);

/// The sweep's decision in words: the smallest partition meeting the target, or why none does.
std::string recommendation(const std::vector<SweepPoint>& points, double p99_target_us);

}  // namespace trtet_run
