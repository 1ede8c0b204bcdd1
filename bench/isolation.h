// The isolation scenario (also the side-by-side demo): a latency-critical engine alone and
// beside an SM-flooding engine, (a) each in its own green context, (b) both on the whole GPU.
#pragma once

#include <vector>

#include "harness.h"
#include "spin_engine.h"

namespace trtet_bench {

struct IsolationOptions {
  unsigned victim_sms = 32;  ///< the victim's partition; the aggressor gets the rest
  int calls = 2000;          ///< measured victim calls per condition
  SpinOptions victim{64, 128, 0, 50'000, 1, 1 << 20};             ///< 64 blocks, 50 us
  SpinOptions aggressor{264, 1024, 100 * 1024, 1'000'000, 1, 1 << 20};  ///< 2 heavy blocks per SM, 1 ms
};

struct Condition {
  const char* name;
  Percentiles latency;  ///< host time of execute + stream sync, us
  std::vector<double> samples_us;
};

struct IsolationResult {
  unsigned victim_granted = 0;
  unsigned aggressor_granted = 0;
  std::size_t victim_observed = 0;     ///< distinct SMs the victim partition's stream ran on
  std::size_t aggressor_observed = 0;
  std::size_t overlap = 0;             ///< SMs both partitions ran on
  int device_sms = 0;
  Condition green_alone{"green alone", {}, {}};
  Condition green_beside{"green beside aggressor", {}, {}};
  Condition shared_alone{"whole GPU alone", {}, {}};
  Condition shared_beside{"whole GPU beside aggressor", {}, {}};

  double green_p99_ratio() const { return green_beside.latency.p99 / green_alone.latency.p99; }
  double shared_p99_ratio() const { return shared_beside.latency.p99 / shared_alone.latency.p99; }
};

/// Runs the four conditions through the delegate (sessions of SpinEngine under CudaStreamGuard).
ex::Result<IsolationResult> run_isolation(const IsolationOptions& options);

}  // namespace trtet_bench
