// What the rows of trtet-scenarios share: the row and configuration types, a session over the spin
// engine, and host / GPU time per call. Each scenario is a function that appends its rows; the
// rows of one run are printed as one table (bench/scenarios.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "session/session.h"
#include "harness.h"
#include "spin_engine.h"

namespace trtet_bench {

/// One line of the scenario table: what was measured against what, and whether the goal is met.
struct Row {
  std::string id;
  std::string what;
  std::string measured;
  std::string reference;
  double ratio = 0;
  std::string goal;
  bool met = false;
};

struct Config {
  std::set<std::string> only;
  std::string out_dir = ".";
  int calls = 2000;
  bool wants(const char* id) const { return only.empty() || only.count(id) != 0; }
};

/// A scenario: measures, prints its own detail lines, appends its rows (and CSV under out_dir).
using Scenario = void (*)(const Config& config, std::vector<Row>& rows);

/// isolation_memory_bound (bench/scenarios_isolation.cpp): the isolation scenario's victim beside a
/// memory-bound neighbour, through the delegate against the same kernels launched directly.
void isolation_memory_bound(const Config& config, std::vector<Row>& rows);

/// host_staging (bench/scenarios_staging.cpp): 64 MiB in + out in host memory, pinned against pinned
/// cudaMemcpy, pageable against the limit of staging on this host.
void host_staging(const Config& config, std::vector<Row>& rows);

/// first_calls and session_memory (bench/scenarios_memory.cpp): the first calls of a session with a
/// staging budget against its steady calls, and the memory a session adds.
void first_calls(const Config& config, std::vector<Row>& rows);
void session_memory(const Config& config, std::vector<Row>& rows);

/// pipelined_host_io (bench/scenarios_pipeline.cpp): back-to-back calls with 1 MiB of pinned input
/// and output from 1 to 8 threads on their own streams, against the bound of copies and engine
/// overlapped, the same pieces measured overlapped, and the same call pattern in raw CUDA (no
/// delegate).
void pipelined_host_io(const Config& config, std::vector<Row>& rows);

/// An initialized session over a SpinEngine on device 0.
std::unique_ptr<ex::delegate::Session> spin_session(const SpinOptions& options,
                                                    ex::delegate::SessionOptions session_options = {});

/// Host time per call of `body`, over 20000 calls in batches of `batch` (500 unless given) with
/// `stream` drained between batches (so the launch queue never fills and blocks the host).
template <typename Body>
double host_us_per_call(cudaStream_t stream, Body&& body, int batch = 500) {
  constexpr int kCalls = 20000;
  double total = 0;
  for (int done = 0; done < kCalls; done += batch) {
    require_cuda(cudaStreamSynchronize(stream), "sync");
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) body();
    total += micros_since(start);
  }
  require_cuda(cudaStreamSynchronize(stream), "sync");
  return total / ((kCalls + batch - 1) / batch * batch);
}

/// Host time per call (us) of `batch` back-to-back `body` calls, `stream` drained before them.
template <typename Body>
double batch_us_per_call(cudaStream_t stream, Body&& body, int batch) {
  require_cuda(cudaStreamSynchronize(stream), "sync");
  const auto start = Clock::now();
  for (int i = 0; i < batch; ++i) body();
  return micros_since(start) / batch;
}

/// GPU time per call of `calls` back-to-back `body` calls on `stream`, by events around them all.
template <typename Body>
double gpu_us_per_call(cudaStream_t stream, int calls, Body&& body) {
  cudaEvent_t start = nullptr, stop = nullptr;
  require_cuda(cudaEventCreate(&start), "event");
  require_cuda(cudaEventCreate(&stop), "event");
  require_cuda(cudaStreamSynchronize(stream), "sync");
  require_cuda(cudaEventRecord(start, stream), "record");
  for (int i = 0; i < calls; ++i) body();
  require_cuda(cudaEventRecord(stop, stream), "record");
  require_cuda(cudaEventSynchronize(stop), "sync");
  float ms = 0;
  require_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms / calls;
}

}  // namespace trtet_bench
