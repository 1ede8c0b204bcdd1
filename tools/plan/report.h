// How trtet-plan reports: the curves and the side-by-side runs as CSV (tools/plot_plan.py reads
// them), the final table, and the plan file's contents. Pure, tested without a GPU.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <string>
#include <vector>

#include "plan/search.h"

namespace trtet_plan {

/// One model in one side-by-side run.
struct VerifyRow {
  int round = 0;                 ///< 1 for the first verification, 2.. after adjustments
  std::string model;
  unsigned sms = 0;
  double p99_target_us = 0;
  double min_calls_per_s = 0;
  double p99_alone_us = 0;       ///< from the curve, at sms
  double p50_beside_us = 0;
  double p99_beside_us = 0;
  double calls_per_s_beside = 0;
  bool meets = false;            ///< p99 beside <= target and calls/s beside >= the minimum
};

/// Whether a side-by-side measurement meets a model's targets.
bool meets_targets(double p99_us, double calls_per_s, double p99_target_us, double min_calls_per_s);

/// model,sms,p50_us,p99_us,calls_per_s,p99_target_us,min_calls_per_s: one row per measured point.
/// `p50_us` per model and point, in the order of models[i].curve (may be empty: 0 written).
std::string curves_csv(const std::vector<ModelNeeds>& models, const std::vector<std::vector<double>>& p50_us);

/// round,model,sms,p99_target_us,min_calls_per_s,p99_alone_us,p50_beside_us,p99_beside_us,calls_per_s_beside,meets
std::string verify_csv(const std::vector<VerifyRow>& rows);

/// The search's plan as lines: per model its SMs, predicted p99 and ratio; then the total.
std::string search_table(const std::vector<ModelNeeds>& models, const SearchResult& result, const GpuShape& gpu);

/// The final table: per model target, SMs, p99 alone on its partition, p99 and calls/s beside the
/// others, headroom to the target, met or not; then the SMs planned, the remainder and its name.
std::string final_table(const std::vector<VerifyRow>& rows, const GpuShape& gpu, const std::string& remainder_name);

/// The plan file's contents: `rows` (the last verification, one per model, in split order) and
/// the GPU; `programs` per model (informational). A plan for any device (one entry, kAnyDevice).
torch_tensorrt::executorch_backend::PartitionPlan make_plan(const std::vector<VerifyRow>& rows,
                                                             const std::vector<std::string>& programs,
                                                             const torch_tensorrt::executorch_backend::PlanGpu& gpu,
                                                             const std::string& remainder_name);

}  // namespace trtet_plan
