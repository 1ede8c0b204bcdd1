// trtet-plan from start to end: measure the curves, search, verify side by side, adjust, and the
// plan file's contents. The measurements come through a Measurer: on the GPU, GpuMeasurer
// (measure.h: trtet-run's runner on green-context partitions); in the CPU tests, a fake whose
// models slow each other down as the test says. main.cpp prints and writes files.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstdio>
#include <optional>
#include <vector>

#include "common/status.h"
#include "plan/options.h"
#include "plan/report.h"
#include "plan/search.h"
#include "run/stats.h"

namespace trtet_plan {

/// Each model alone on partitions of each size: per model, per size, in order.
struct Curves {
  std::vector<std::vector<CurvePoint>> points;
  std::vector<std::vector<double>> p50_us;
};

/// Where the planner's numbers come from.
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// The GPU planned for (its name and green-context limits).
  virtual ex::Result<torch_tensorrt::executorch_backend::PlanGpu> gpu() = 0;
  /// Every model alone on a partition of each of `sizes` SMs (printing rows to `log`).
  virtual ex::Result<Curves> curves(const std::vector<unsigned>& sizes, std::FILE* log) = 0;
  /// All models at once, model i on a partition of sms[i] SMs, each from its own thread; with
  /// `keep_remainder` the SMs left over form one more partition (flooded where `load_remainder`).
  /// Per model: latency and calls/s beside the others.
  virtual ex::Result<std::vector<trtet_run::LatencyStats>> side_by_side(const std::vector<unsigned>& sms,
                                                                        bool keep_remainder, bool load_remainder) = 0;
};

struct PlannerResult {
  torch_tensorrt::executorch_backend::PlanGpu plan_gpu;
  GpuShape gpu;
  std::vector<ModelNeeds> models;              ///< curves measured alone; interference as learned
  std::vector<std::vector<double>> p50_us;     ///< per model and curve point (for the CSV)
  SearchResult first;                          ///< the search over the curves alone
  SearchResult exhaustive;                     ///< the exhaustive search of the same curves
  bool exhaustive_ran = false;                 ///< false where --exhaustive-limit stopped it
  double search_us = 0;                        ///< time the search took
  double exhaustive_us = 0;
  double curves_s = 0;                         ///< time measuring each model alone
  double beside_s = 0;                         ///< time running the models side by side, every round
  double total_s = 0;                          ///< the planner's whole run
  SearchResult last;                           ///< the search whose plan was verified last
  std::vector<VerifyRow> verify;               ///< every side-by-side run, every round
  std::vector<VerifyRow> final_rows;           ///< the last round, one per model
  std::vector<std::string> problems;           ///< why no plan meets every target, where none does
  bool met = false;                            ///< every model met its targets beside the others
  std::optional<torch_tensorrt::executorch_backend::PartitionPlan> plan;  ///< set where met
  int exit_code = kPlanFailed;
};

/// Runs the whole planner over `measurer`; prints its progress and tables to `log` (nullptr:
/// quiet). An error is returned for a failure to measure (no GPU, a program that does not load or
/// run); a plan that cannot be met is a result (exit_code kPlanInfeasible, problems set).
ex::Result<PlannerResult> run_planner(const PlanOptions& options, Measurer& measurer, std::FILE* log);

/// The sizes to measure: --sizes filtered to what the GPU allows (printing what is dropped), or
/// every size the GPU allows.
ex::Result<std::vector<unsigned>> sizes_to_measure(const std::string& sizes, const GpuShape& gpu, std::FILE* log);

}  // namespace trtet_plan
