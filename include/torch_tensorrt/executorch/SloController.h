// Following the load, the pure part: a ladder of partition plans as data and the SLO controller that
// picks one of them from each model's windowed latency (docs/PLANNING.md, "Following the load").
//
//   auto ladder = slo::Ladder::make({{"lat16", {{"latency", 16, {{1000, 80}, {4000, 140}}},
//                                               {"bulk", 104, {{100, 900}, {400, 1500}}}}},
//                                    {"lat48", {...}}}, /*device_sms=*/132);
//   auto controller = slo::SloController::make(*ladder, {{"latency", 150}, {"bulk", 2000}}, "lat16");
//   controller->add_sample("latency", /*latency_us=*/97.0, /*time_s=*/now);   // after each call
//   auto decision = controller->decide(now);                                   // e.g. every 100 ms
//   if (decision.ok() && decision->switched) plan_set.switch_to(decision->plan_name);
//
// A ladder is the plans of a plan set as data: each plan gives every model its SM count and a measured
// latency curve (p99 in µs at a rate in calls/s, from trtet-plan's measurements). A prediction between
// two points is linear, below the first point it is the first point's p99, and beyond the last point
// the plan is infeasible for that model (nothing was measured there). The controller is fed samples
// and times (seconds on any monotonic clock) and returns decisions; moving the GPU's partitions is the
// caller's (a plan set's switch_to, PlanSet.h). Both are pure: no GPU, no clock of their own.
//
// The rule (decide(now)):
//   rate(m)     = samples of m in the window (now - window_s, now] / window_s, raised to the
//                 target's min_rate_per_s; within window_s of the first sample or decision, once
//                 the window holds min_samples samples of m, over the time since then instead
//                 (fewer are a burst, not a rate);
//   headroom(p) = min over models with a target of target_p99(m) / predicted_p99(p, m, rate(m))
//                 (0 where the rate is beyond p's measured curve);
//   p meets every target when headroom(p) >= 1. The candidate is the plan with the largest headroom
//   (the first in ladder order on a tie; the current plan wins a tie with it).
//   The current plan misses a target when its headroom is < 1, or when a model's observed windowed
//   p99 (with at least min_samples samples) is above its target.
//   Switch to the candidate only when all of:
//     headroom(candidate) > headroom(current) * (1 + margin),
//     the current plan misses a target, or the candidate has won so for `confirm` decisions in a row,
//     at least min_dwell_s has passed since the last switch.
//   When no plan meets every target, the candidate is the least bad plan and the decision names the
//   models it cannot meet.
#pragma once

#include <torch_tensorrt/executorch/Error.h>

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torch_tensorrt::executorch_backend::slo {

/// One measured point: at `rate_per_s` calls/s the model's p99 was `p99_us`.
struct CurvePoint {
  double rate_per_s = 0;
  double p99_us = 0;
};

/// A model's share in one plan: its SMs and its latency curve on them (sorted by rate).
struct ModelShare {
  std::string model;
  unsigned sms = 0;
  std::vector<CurvePoint> curve;
};

/// One plan of the ladder: a name and every model's share.
struct LadderPlan {
  std::string name;
  std::vector<ModelShare> models;
};

/// The checked ladder. Rules (Ladder::make refuses a ladder that breaks one, kInvalidArgument naming
/// the plan and model): at least one plan and one model; plan names non-empty and unique; every plan
/// names every model of the first plan, each once, and no other; SM counts > 0 and a plan's SMs in all
/// at most the device's `device_sms`; each curve non-empty, its values finite and non-negative, its
/// rates strictly increasing.
class Ladder {
 public:
  static Result<Ladder> make(std::vector<LadderPlan> plans, unsigned device_sms);

  std::size_t size() const noexcept { return plans_.size(); }
  const LadderPlan& plan(std::size_t index) const { return plans_.at(index); }
  /// The models, in the first plan's order; every plan's `models` is stored in this order.
  const std::vector<std::string>& models() const noexcept { return models_; }
  unsigned device_sms() const noexcept { return device_sms_; }

  /// The index of the plan named `name`, or nullopt.
  std::optional<std::size_t> find_plan(std::string_view name) const;
  /// The index of `model` in models(), or nullopt.
  std::optional<std::size_t> find_model(std::string_view model) const;

  /// The p99 (µs) plan `plan` predicts for model `model` (indices) at `rate_per_s`; nullopt beyond the
  /// curve's last point (infeasible). Preconditions: valid indices, rate finite and >= 0.
  std::optional<double> predict(std::size_t plan, std::size_t model, double rate_per_s) const;

 private:
  Ladder() = default;
  std::vector<LadderPlan> plans_;
  std::vector<std::string> models_;
  unsigned device_sms_ = 0;
};

/// A model's service-level objective: its p99 in µs, and the rate (calls/s) the plan must carry at
/// least, whatever the observed rate.
struct Target {
  std::string model;
  double p99_us = 0;
  double min_rate_per_s = 0;
};

struct ControllerOptions {
  double window_s = 1.0;     ///< the sliding window of samples, seconds (> 0)
  double margin = 0.10;      ///< the headroom a new plan must win by, a fraction (>= 0)
  /// Decisions in a row a better plan must win while the current one meets every target (>= 1).
  unsigned confirm = 3;
  double min_dwell_s = 0;    ///< seconds since the last switch before another (>= 0)
  std::size_t min_samples = 20;  ///< samples in the window before a model's observed p99 counts
};

/// What one model looked like at a decision.
struct ModelWindow {
  std::string model;
  std::size_t samples = 0;
  double rate_per_s = 0;              ///< observed (before min_rate_per_s)
  std::optional<double> p99_us;       ///< observed; nullopt with fewer than min_samples samples
};

struct Decision {
  bool switched = false;       ///< the controller's current plan changed at this decision
  std::size_t plan = 0;        ///< the plan now current (index into the ladder)
  std::string plan_name;
  std::size_t candidate = 0;   ///< the plan with the most headroom
  double headroom = 0;         ///< of the current plan after the decision
  double candidate_headroom = 0;
  bool feasible = true;        ///< some plan meets every target
  std::vector<std::string> unmet;  ///< when !feasible: the models the candidate plan cannot meet
  std::string message;         ///< what was decided and why, in words
  std::vector<ModelWindow> models;
};

class SloController {
 public:
  /// Checks the targets (each names a model of the ladder, once; p99 > 0; min rate >= 0; finite), the
  /// options, and `initial_plan` (a plan of the ladder). At least one target.
  static Result<SloController> make(Ladder ladder, std::vector<Target> targets, std::string_view initial_plan,
                                    ControllerOptions options = {});

  /// One call of `model` that took `latency_us`, finished at `time_s`. Refused, changing nothing: an
  /// unknown model (kNotFound), a negative or non-finite latency or time, a time before the latest
  /// sample's or decision's (kInvalidArgument).
  Status add_sample(std::string_view model, double latency_us, double time_s);

  /// Decides at `now_s` (not before the latest sample or decision: kInvalidArgument, nothing changes).
  Result<Decision> decide(double now_s);

  /// Makes `plan` current (an operator's or a caller's own switch); kNotFound for a plan the ladder does
  /// not hold, and nothing changes. Counts as a switch for the dwell time when the plan changes.
  Status set_current(std::string_view plan);

  std::size_t current() const noexcept { return current_; }
  const std::string& current_name() const { return ladder_.plan(current_).name; }
  const Ladder& ladder() const noexcept { return ladder_; }
  std::size_t switches() const noexcept { return switches_; }

 private:
  SloController(Ladder ladder) : ladder_(std::move(ladder)) {}
  double headroom_of(std::size_t plan, const std::vector<double>& rates) const;
  void prune(double now_s);

  Ladder ladder_;
  std::vector<std::optional<Target>> targets_;  // by model index
  ControllerOptions options_;
  std::vector<std::deque<std::pair<double, double>>> samples_;  // by model: (time_s, latency_us)
  std::size_t current_ = 0;
  std::optional<double> first_time_;  // the first sample's or decision's time
  double latest_time_ = 0;
  std::optional<double> last_switch_;
  std::size_t streak_plan_ = 0;
  unsigned streak_ = 0;
  std::size_t switches_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::slo
