// The SLO controller: from each model's windowed latency it picks the plan of a ladder that meets
// every p99 target with the most headroom, with hysteresis so that it does not flap. Pure: it is fed
// samples and times (seconds on any monotonic clock) and returns decisions; switching the GPU's
// partitions is the caller's (not built yet, docs/PLANNING.md "Following the load").
//
// The rule (decide(now)):
//   rate(m)     = samples of m in the window (now - window_s, now] / window length, raised to the
//                 target's min_rate_per_s;
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

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "slo/ladder.h"

namespace torch_tensorrt::executorch_backend::slo {

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
