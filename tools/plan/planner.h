// trtet-plan from start to end: measure the curves, search, verify side by side, adjust, and the
// plan file's contents. main.cpp prints and writes files; the GPU tests call run_planner directly.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstdio>
#include <optional>
#include <vector>

#include "common/status.h"
#include "plan/options.h"
#include "plan/report.h"
#include "plan/search.h"

namespace trtet_plan {

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
  SearchResult last;                           ///< the search whose plan was verified last
  std::vector<VerifyRow> verify;               ///< every side-by-side run, every round
  std::vector<VerifyRow> final_rows;           ///< the last round, one per model
  std::vector<std::string> problems;           ///< why no plan meets every target, where none does
  bool met = false;                            ///< every model met its targets beside the others
  std::optional<torch_tensorrt::executorch_backend::PartitionPlan> plan;  ///< set where met
  int exit_code = kPlanFailed;
};

/// Runs the whole planner; prints its progress and tables to `log` (nullptr: quiet). An error is
/// returned for a failure to measure (no GPU, a program that does not load or run); a plan that
/// cannot be met is a result (exit_code kPlanInfeasible, problems set).
ex::Result<PlannerResult> run_planner(const PlanOptions& options, std::FILE* log);

/// The sizes to measure: --sizes filtered to what the GPU allows (printing what is dropped), or
/// every size the GPU allows.
ex::Result<std::vector<unsigned>> sizes_to_measure(const std::string& sizes, const GpuShape& gpu, std::FILE* log);

}  // namespace trtet_plan
