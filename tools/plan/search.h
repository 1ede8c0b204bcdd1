// trtet-plan's search: which partition sizes meet every model's targets, as a pure function over
// the latency curves the tool measured (testable without a GPU; tests/plan/search_test.cpp).
//
// Note [plan search]
// ------------------
// A model's score on s SMs is ratio(s) = max(p99(s) * interference / p99 target,
// min calls/s * interference / calls/s(s)): it meets its targets where ratio(s) <= 1. p99(s) and
// calls/s(s) come from the model measured alone on an s-SM partition; `interference` (>= 1) is what
// the side-by-side verification learned (p99 beside the others / p99 alone), 1 until then.
//
// For any bound r, need_i(r) = the smallest measured size with ratio_i(s) <= r. It only shrinks as
// r grows. The plan is need_i(r*) for the smallest r* whose needs fit in one split (sum <= the
// most SMs one split hands out); r* is found by bisection over the finite set of ratios the
// curves hold. r* <= 1 means every target is met, and then the plan is need_i(1): each model's
// smallest meeting size, which is the fewest SMs of any plan (models' needs are independent, so
// no other choice can use fewer). r* > 1 means no plan meets every target, and need_i(r*) is the
// plan that misses by the least (the largest ratio is the smallest possible). `spread` asks for
// need_i(r*) even when r* <= 1: the SMs left over go to the models with the least margin.
// Cost: O(M * P * log(M * P)) for M models of P points; exhaustive_search() tries all P^M.
#pragma once

#include <string>
#include <vector>

namespace trtet_plan {

/// One measured point of a model's curve: alone on a partition of `sms` SMs.
struct CurvePoint {
  unsigned sms = 0;
  double p99_us = 0;
  double calls_per_s = 0;
};

/// A model as the search sees it.
struct ModelNeeds {
  std::string name;
  double p99_target_us = 0;     ///< > 0
  double min_calls_per_s = 0;   ///< 0: none
  double interference = 1.0;    ///< >= 1: p99 beside the others over p99 alone, learned by verification
  std::vector<CurvePoint> curve;
};

/// What one split of the GPU can give (GreenContextLimits).
struct GpuShape {
  unsigned sm_count = 0;     ///< SMs of the device
  unsigned unit = 0;         ///< partition granularity
  unsigned capacity = 0;     ///< the most SMs one split hands out to requested partitions
};

/// A model's partition in a plan, and what its curve predicts there.
struct Choice {
  unsigned sms = 0;
  double p99_us = 0;        ///< predicted: p99 alone * interference
  double calls_per_s = 0;   ///< predicted: calls/s alone / interference
  double ratio = 0;         ///< Note [plan search]; <= 1 meets the targets
  bool meets = false;
};

struct SearchResult {
  bool feasible = false;            ///< every model meets its targets within one split
  std::vector<Choice> choices;      ///< per model, in order (empty where no plan can be made at all)
  unsigned total_sms = 0;
  unsigned headroom_sms = 0;        ///< sm_count - total_sms: the remainder
  double worst_ratio = 0;           ///< the largest ratio of the plan
  /// Why there is no feasible plan, one sentence per finding: which model cannot be met and the
  /// best it can do, or what the models need together against what one split gives.
  std::vector<std::string> problems;
};

struct SearchOptions {
  bool spread = false;  ///< give the SMs left over to the models with the least margin (Note [plan search])
};

/// The sizes a plan may use: multiples of unit, from unit to capacity.
std::vector<unsigned> valid_sizes(const GpuShape& gpu);

/// A model's ratio at one of its curve's points (Note [plan search]).
double point_ratio(const ModelNeeds& model, const CurvePoint& point);

/// The search of Note [plan search]. Points of a curve that are not valid sizes are ignored; a
/// model with no valid point, a target <= 0 or a GpuShape that cannot be split gives a problem.
SearchResult search_plan(const std::vector<ModelNeeds>& models, const GpuShape& gpu, const SearchOptions& options = {});

/// The reference: every combination of the models' valid points that fits one split. Feasible:
/// the fewest SMs meeting every target (ties: the smallest worst ratio); otherwise the smallest
/// worst ratio (ties: the fewest SMs). Exponential: for tests and the tool's quality check of a
/// few models. `max_combinations` (0: no bound) stops it early; `completed` says whether it ran through.
SearchResult exhaustive_search(const std::vector<ModelNeeds>& models, const GpuShape& gpu,
                               unsigned long long max_combinations = 0, bool* completed = nullptr);

/// After a side-by-side run: raises each model's interference to what was seen where it missed
/// (p99 beside / p99 alone, times 1 + `margin`), so the next search gives it more SMs. A model
/// that met its targets keeps its interference. Returns whether anything changed.
/// `beside_p99_us`, `beside_calls_per_s`: per model, as measured beside the others on `plan`.
bool learn_interference(std::vector<ModelNeeds>& models, const std::vector<Choice>& plan,
                        const std::vector<double>& beside_p99_us, const std::vector<double>& beside_calls_per_s,
                        double margin = 0.02);

}  // namespace trtet_plan
