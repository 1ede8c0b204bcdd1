// trtet-plan --plan-set: which few plans of one GPU cover the mixes of load the models are expected
// to see, as a pure function over the measured curves (testable without a GPU;
// tests/plan/plan_set_select_test.cpp), and the plan set file made of them (PlanSet.h).
//
// Note [plan set selection]
// -------------------------
// Inputs: per model its p99 target, its expected rate range [low, high] calls/s, and its curve (p99
// against calls/s) on every measured partition size. A prediction follows the SLO controller's rule
// exactly (slo::Ladder::predict: linear between points, the first point's p99 below the first rate,
// infeasible beyond the last rate), so the set selected is the one the controller will judge.
//  1. The mixes: each model's range sampled at `levels` rates (geometric from low to high; linear
//     where low is 0; one rate where low == high), every combination of the models' rates.
//  2. A mix's own plan: each model on the smallest measured size that meets its target at the
//     mix's rate. A mix no plan can meet (a model beyond every size's curve, or the sizes it needs
//     together beyond what one split hands out) is reported and left out.
//  3. A plan covers a mix where every model's prediction on its size at the mix's rate meets its
//     target. The candidates are the mixes' own plans, and the model-by-model maximum of each two of
//     them that still fits one split (one plan for two mixes).
//  4. Greedy cover: the candidate covering the most mixes not yet covered (ties: fewer SMs in all,
//     then the smaller sizes model by model), until every mix is covered or `max_plans` are taken.
//     Mixes still uncovered are reported. The plans are written smallest first (the first is
//     current once applied), named plan-1, plan-2, ...
// Each plan carries every model's curve on its size ("curves"), which plan_set_ladder reads. The set
// has no remainder: the SLO controller needs a curve for every partition, and nothing is measured on
// the SMs the models leave.
#pragma once

#include <torch_tensorrt/executorch/PlanSet.h>
#include <torch_tensorrt/executorch/SloController.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "plan/search.h"

namespace trtet_plan {

namespace ex = torch_tensorrt::executorch_backend;

/// One --rate: NAME=LOW:HIGH, calls/s, 0 <= LOW <= HIGH <= 1e9, HIGH > 0.
struct RateRange {
  std::string model;
  double low_per_s = 0;
  double high_per_s = 0;
};

/// Parses one --rate value. kInvalidArgument naming what is wrong.
ex::Result<RateRange> parse_rate_range(const std::string& text);

/// A model as the selection sees it.
struct SetModel {
  std::string name;
  double p99_target_us = 0;  ///< > 0
  double low_per_s = 0;      ///< its expected rate range
  double high_per_s = 0;
  std::string program;       ///< written into its partitions (informational)
  /// Per measured size (SetInput::sizes, same order): its curve there, rates strictly increasing.
  std::vector<std::vector<ex::slo::CurvePoint>> curves;
};

struct SetInput {
  std::vector<SetModel> models;
  std::vector<unsigned> sizes;  ///< the measured partition sizes, ascending, each a size the GPU makes
  GpuShape gpu;
  std::size_t max_plans = 4;    ///< 1 to kMaxSetPlans, and at most sizes.size()
  unsigned levels = 4;          ///< rates per model's range, 2 to 16
};

/// The largest number of mixes (levels ^ models) the selection takes.
inline constexpr std::size_t kMaxMixes = 65536;

struct SetSelection {
  std::vector<std::vector<unsigned>> plans;  ///< per plan (smallest first), per model: its SMs
  std::vector<std::vector<double>> mixes;    ///< per mix, per model: its rate
  std::vector<int> covered_by;               ///< per mix: the first plan that covers it; -1 none
  std::size_t infeasible = 0;                ///< mixes no plan within one split meets
  std::size_t uncovered = 0;                 ///< feasible mixes the plans taken do not cover
  std::vector<std::string> problems;         ///< one sentence per finding (the first few mixes named)
};

/// Note [plan set selection]. kInvalidArgument for bad input: no model, a model without a curve on
/// a size (or a curve slo::Ladder refuses), a bad rate range or target, sizes not ascending or not
/// sizes the GPU makes, max_plans outside 1 to kMaxSetPlans or above the number of sizes, levels
/// outside 2 to 16, more than kMaxMixes mixes. Mixes that cannot be met are findings, not errors.
ex::Result<SetSelection> select_plan_set(const SetInput& input);

/// The plan set file of `selection` (checked as plan_set_json checks it): partitions named after
/// the models with their targets, every model's curve on its size in every plan, no remainder.
ex::Result<ex::PlanSet> make_plan_set(const SetInput& input, const SetSelection& selection, const ex::PlanGpu& gpu);

/// One line per plan ("plan-1  latency 16 SMs  batch 32 SMs ...  covers N of M mixes") and the
/// findings, for the tool's report.
std::string selection_report(const SetInput& input, const SetSelection& selection);

}  // namespace trtet_plan
