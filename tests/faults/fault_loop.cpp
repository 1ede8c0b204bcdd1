#include "faults/fault_loop.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "staging/pool.h"
#include "executorch/executorch_test_support.h"

namespace trtet_faults {
namespace {

namespace staging = torch_tensorrt::executorch_backend::staging;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::vector<std::string> reached_names() {
  std::string text(trtet_faults_names(nullptr, 0) + 1, '\0');
  trtet_faults_names(text.data(), text.size());
  std::vector<std::string> names;
  std::istringstream lines(text.c_str());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string compare(const MemorySnapshot& before, const MemorySnapshot& after, const LoopOptions& options) {
  std::ostringstream out;
  if (after.device_live != before.device_live) {
    out << "device bytes live through the seam " << before.device_live << " -> " << after.device_live << "; ";
  }
  if (after.pinned_live != before.pinned_live) {
    out << "pinned bytes live through the seam " << before.pinned_live << " -> " << after.pinned_live << "; ";
  }
  if (after.device_pool_used != before.device_pool_used) {
    out << "device staging pool used " << before.device_pool_used << " -> " << after.device_pool_used << "; ";
  }
  if (after.pinned_pool_used != before.pinned_pool_used) {
    out << "pinned staging pool used " << before.pinned_pool_used << " -> " << after.pinned_pool_used << "; ";
  }
  if (options.gpu && static_cast<long long>(after.device_free) + options.device_free_slack <
                         static_cast<long long>(before.device_free)) {
    out << "device free memory " << before.device_free << " -> " << after.device_free << "; ";
  }
  return out.str();
}

}  // namespace

MemorySnapshot snapshot(bool gpu) {
  Quiet quiet;  // the loop's own CUDA calls are no points
  MemorySnapshot s;
  if (gpu) {
    (void)cudaDeviceSynchronize();
    (void)staging::trim_staging_pool(staging::PoolKind::kDevice, 0);
    (void)staging::trim_staging_pool(staging::PoolKind::kPinnedHost, 0);
    if (auto usage = staging::staging_pool_usage(staging::PoolKind::kDevice, 0); usage.ok()) {
      s.device_pool_used = usage->used;
    }
    if (auto usage = staging::staging_pool_usage(staging::PoolKind::kPinnedHost, 0); usage.ok()) {
      s.pinned_pool_used = usage->used;
    }
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess) s.device_free = free_bytes;
    (void)cudaGetLastError();
  }
  s.device_live = trtet_faults_live_bytes(0);
  s.pinned_live = trtet_faults_live_bytes(1);
  return s;
}

bool names_failure(const std::string& message, const std::string& fired) {
  const std::string text = lower(message);
  std::vector<std::string> needles = {lower(fired), "injected fault", "out of memory", "memoryallocationfailed",
                                      "allocat"};
  for (cudaError_t error : {cudaErrorMemoryAllocation, cudaErrorInvalidValue, cudaErrorStreamCaptureInvalidated,
                            cudaErrorGraphExecUpdateFailure}) {
    needles.push_back(lower(cudaGetErrorString(error)));
    needles.push_back(lower(cudaGetErrorName(error)));
  }
  if (fired == "pthread_create") needles.push_back("thread");
  for (const std::string& needle : needles) {
    if (!needle.empty() && text.find(needle) != std::string::npos) return true;
  }
  return false;
}

LoopRow run_loop(const std::string& shape, const std::string& path, const Scenario& scenario,
                 const LoopOptions& options) {
  using Clock = std::chrono::steady_clock;
  LoopRow row;
  row.shape = shape;
  row.path = path;
  auto failure = [&](unsigned long n, const std::string& fired, const std::string& what) {
    row.failures.push_back("N=" + std::to_string(n) + " " + (fired.empty() ? "-" : fired) + ": " + what);
  };

  // The fault-free run: twice, so that what a first run makes once per process (shared pools,
  // the driver's table, the copy workers) is there before the baseline.
  trtet_faults_reset();
  for (int warm = 0; warm < 2; ++warm) {
    trtet_faults_arm(0, 0);
    trtet_test::clear_log();
    const Outcome clean = scenario();
    if (!clean.ok || !clean.wrong.empty()) {
      failure(0, "", "the run with no fault failed at " + clean.step + ": " + clean.message +
                         (clean.wrong.empty() ? "" : " (wrong: " + clean.wrong.front() + ")"));
      return row;
    }
  }
  row.points = trtet_faults_reached();
  for (const std::string& name : reached_names()) row.calls.insert(name);
  const MemorySnapshot baseline = snapshot(options.gpu);

  for (unsigned long n = 1;; ++n) {
    if (n > options.max_n) {
      failure(n, "", "still reaching points at N=" + std::to_string(options.max_n));
      break;
    }
    trtet_test::clear_log();
    trtet_faults_arm(n, 0);
    const auto start = Clock::now();
    const Outcome run = scenario();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const bool fired = trtet_faults_fired() != 0;
    const std::string fired_name = trtet_faults_fired_name();
    for (const std::string& name : reached_names()) row.calls.insert(name);
    trtet_faults_disarm();
    if (!fired) {
      // Past the last point: this run must be a clean one.
      if (!run.ok || !run.wrong.empty()) {
        failure(n, "", "no fault reached, yet the run failed at " + run.step + ": " + run.message);
      }
      break;
    }
    ++row.tried;
    const std::size_t failures_before = row.failures.size();
    if (seconds > options.bound_s) failure(n, fired_name, "the run took " + std::to_string(seconds) + " s");
    for (const std::string& wrong : run.wrong) failure(n, fired_name, "a completed step was wrong: " + wrong);
    if (!run.ok && !names_failure(run.message, fired_name)) {
      failure(n, fired_name, run.step + " failed without naming the failure: " + run.message);
    }
    const std::string leaked = compare(baseline, snapshot(options.gpu), options);
    if (!leaked.empty()) failure(n, fired_name, "after destroy: " + leaked);
    // With faults off the same load and calls succeed.
    trtet_test::clear_log();
    trtet_faults_arm(0, 0);
    const Outcome again = scenario();
    if (!again.ok || !again.wrong.empty()) {
      failure(n, fired_name, "the next fault-free run failed at " + again.step + ": " + again.message +
                                 (again.wrong.empty() ? "" : " (wrong: " + again.wrong.front() + ")"));
    }
    if (row.failures.size() == failures_before) {
      ++row.survived;
      if (run.ok) ++row.absorbed;
    }
  }
  trtet_faults_reset();
  return row;
}

void print_table(const std::vector<LoopRow>& rows, const char* title) {
  std::printf("\n%s\n", title);
  std::printf("%-16s %-18s %7s %8s %9s %9s  %s\n", "shape", "path", "points", "N tried", "survived", "absorbed",
              "calls reached");
  unsigned long points = 0, tried = 0, survived = 0, failed = 0;
  for (const LoopRow& row : rows) {
    std::string calls;
    for (const std::string& name : row.calls) calls += (calls.empty() ? "" : ",") + name;
    std::printf("%-16s %-18s %7lu %8lu %9lu %9lu  %s\n", row.shape.c_str(), row.path.c_str(), row.points, row.tried,
                row.survived, row.absorbed, calls.c_str());
    for (const std::string& f : row.failures) std::printf("    FAILED %s\n", f.c_str());
    points += row.points;
    tried += row.tried;
    survived += row.survived;
    failed += row.failures.size();
  }
  for (const LoopRow& row : rows) {
    std::printf("fault-row: %s|%s|%lu|%lu|%lu|%lu|%zu\n", row.shape.c_str(), row.path.c_str(), row.points, row.tried,
                row.survived, row.absorbed, row.failures.size());
  }
  std::printf("fault loop: %zu cases, %lu points, %lu N tried, %lu survived, %lu failures\n", rows.size(), points,
              tried, survived, failed);
  std::fflush(stdout);
}

}  // namespace trtet_faults
