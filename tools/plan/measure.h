// trtet-plan's measurements on the GPU, through trtet-run's Runner (ExecuTorch's Module, one call
// at a time, host time of execute + stream sync per call): each model alone on partitions of every
// size, and all models at once, each from its own thread on its own partition's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "common/status.h"
#include "plan/options.h"
#include "plan/search.h"
#include "run/runner.h"
#include "run/stats.h"

namespace trtet_plan {

/// A model loaded for measuring: its spec and its runner (its own Module, inputs and outputs).
struct LoadedModel {
  ModelSpec spec;
  std::unique_ptr<trtet_run::Runner> runner;
};

/// trtet-run's options for `spec` (program, method, I/O memory, shapes, device, test engines).
trtet_run::RunOptions run_options(const ModelSpec& spec, const PlanOptions& options);

/// Loads every model. kInternal / kInvalidArgument naming the model that failed.
ex::Result<std::vector<LoadedModel>> load_models(const PlanOptions& options);

/// Each model alone on a partition of each of `sizes` SMs (one split per size, every model
/// measured on it in turn): per model, per size, in order.
struct Curves {
  std::vector<std::vector<CurvePoint>> points;
  std::vector<std::vector<double>> p50_us;
};
/// Prints a row per point to `log` (nullptr: quiet) as it is measured.
ex::Result<Curves> measure_curves(std::vector<LoadedModel>& models, int device, const std::vector<unsigned>& sizes,
                                  int iterations, int warmup, std::FILE* log);

/// All models at once, model i on streams[i] (of `device`), each from a thread of its own: `warmup` calls each,
/// then all start together and call one at a time until every model has made at least
/// `iterations` calls, so every sample is taken while every other model is calling too. Per model:
/// the latency of those calls and calls/s over the same wall time.
ex::Result<std::vector<trtet_run::LatencyStats>> run_side_by_side(std::vector<LoadedModel>& models,
                                                                  const std::vector<cudaStream_t>& streams, int device,
                                                                  int iterations, int warmup);

}  // namespace trtet_plan
