// Micro figures for the CUDA calls every execute makes (host_overhead's floor): each through the
// runtime and through the driver entry point the runtime wraps (from the project's driver table, as
// execute calls it), so the cost of the runtime layer shows.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda/driver.h"
#include "micro_support.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;

struct Calls {
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  const ex::cuda::DriverApi* driver = nullptr;  ///< the project's table: the entry points execute calls
};

Calls* calls(benchmark::State& state) {
  if (trtet_bench::skipped_without_gpu(state)) return nullptr;
  static Calls* made = [] {
    auto* c = new Calls;
    cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&c->event, cudaEventDisableTiming);
    auto driver = ex::cuda::driver();
    if (driver.ok()) c->driver = *driver;
    return c;
  }();
  return made;
}

/// Drains the stream every 256 records, outside the timing, so the launch queue never fills.
void drain_every_256(benchmark::State& state, cudaStream_t stream, int& pending) {
  if (++pending < 256) return;
  state.PauseTiming();
  cudaStreamSynchronize(stream);
  pending = 0;
  state.ResumeTiming();
}

void BM_RuntimeEventRecord(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr) return;
  int pending = 0;
  for (auto _ : state) {
    cudaEventRecord(c->event, c->stream);
    drain_every_256(state, c->stream, pending);
  }
}
BENCHMARK(BM_RuntimeEventRecord);

void BM_DriverEventRecord(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr || c->driver == nullptr) return;
  int pending = 0;
  for (auto _ : state) {
    c->driver->cuEventRecord(reinterpret_cast<CUevent>(c->event), reinterpret_cast<CUstream>(c->stream));
    drain_every_256(state, c->stream, pending);
  }
}
BENCHMARK(BM_DriverEventRecord);

void BM_RuntimeStreamIsCapturing(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr) return;
  cudaStreamCaptureStatus status{};
  for (auto _ : state) benchmark::DoNotOptimize(cudaStreamIsCapturing(c->stream, &status));
}
BENCHMARK(BM_RuntimeStreamIsCapturing);

void BM_DriverStreamIsCapturing(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr || c->driver == nullptr) return;
  CUstreamCaptureStatus status{};
  for (auto _ : state) benchmark::DoNotOptimize(c->driver->cuStreamIsCapturing(reinterpret_cast<CUstream>(c->stream), &status));
}
BENCHMARK(BM_DriverStreamIsCapturing);

void BM_RuntimeStreamGetId(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr) return;
  unsigned long long id = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cudaStreamGetId(c->stream, &id));
}
BENCHMARK(BM_RuntimeStreamGetId);

void BM_DriverStreamGetId(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr || c->driver == nullptr) return;
  unsigned long long id = 0;
  for (auto _ : state) benchmark::DoNotOptimize(c->driver->cuStreamGetId(reinterpret_cast<CUstream>(c->stream), &id));
}
BENCHMARK(BM_DriverStreamGetId);

void BM_RuntimeGetDevice(benchmark::State& state) {
  Calls* c = calls(state);
  if (c == nullptr) return;
  int device = -1;
  for (auto _ : state) benchmark::DoNotOptimize(cudaGetDevice(&device));
}
BENCHMARK(BM_RuntimeGetDevice);

}  // namespace
