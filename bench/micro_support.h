// What the Google Benchmark micro figures (trtet-micro) share: the skip without a GPU, and the
// untimed synchronize that keeps a benchmark's queue of calls from growing without bound.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/device.h"

namespace trtet_bench {

/// True (the benchmark reports the skip, with CUDA's reason) where no GPU is usable.
inline bool skipped_without_gpu(benchmark::State& state) {
  const auto count = torch_tensorrt::executorch_backend::cuda::device_count();
  if (count.ok()) return false;
  state.SkipWithError(("no GPU: " + count.status().message()).c_str());
  return true;
}

/// Every 256th call, synchronizes `stream` with the timer paused.
inline void drain_every_256(benchmark::State& state, cudaStream_t stream, int& queued) {
  if (++queued < 256) return;
  state.PauseTiming();
  cudaStreamSynchronize(stream);
  queued = 0;
  state.ResumeTiming();
}

}  // namespace trtet_bench
