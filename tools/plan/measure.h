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
#include "plan/planner.h"
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
/// measured on it in turn): per model, per size, in order. Prints a row per point to `log` (nullptr: quiet) as it is measured.
ex::Result<Curves> measure_curves(std::vector<LoadedModel>& models, int device, const std::vector<unsigned>& sizes,
                                  int iterations, int warmup, std::FILE* log);

/// All models at once, model i on streams[i] (of `device`), each from a thread of its own: `warmup` calls each,
/// then all start together and call one at a time until every model has made at least
/// `iterations` calls, so every sample is taken while every other model is calling too. Per model:
/// the latency of those calls and calls/s over the same wall time.
ex::Result<std::vector<trtet_run::LatencyStats>> run_side_by_side(std::vector<LoadedModel>& models,
                                                                  const std::vector<cudaStream_t>& streams, int device,
                                                                  int iterations, int warmup);

/// The planner's measurements on the GPU: the models loaded once, split_device for every
/// partition, trtet-run's load (run/load.h) on the remainder where asked.
class GpuMeasurer final : public Measurer {
 public:
  /// Loads every model of `options` on options.device.
  static ex::Result<std::unique_ptr<GpuMeasurer>> create(const PlanOptions& options);

  ex::Result<torch_tensorrt::executorch_backend::PlanGpu> gpu() override;
  ex::Result<Curves> curves(const std::vector<unsigned>& sizes, std::FILE* log) override;
  ex::Result<std::vector<trtet_run::LatencyStats>> side_by_side(const std::vector<unsigned>& sms, bool keep_remainder,
                                                                bool load_remainder) override;

 private:
  explicit GpuMeasurer(const PlanOptions& options) : options_(options) {}
  PlanOptions options_;
  std::vector<LoadedModel> models_;
};

/// run_planner over a GpuMeasurer: what trtet-plan runs.
ex::Result<PlannerResult> run_planner_on_gpu(const PlanOptions& options, std::FILE* log);

}  // namespace trtet_plan
