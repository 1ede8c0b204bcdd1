// The controller's loop for one plan set on one device, without Triton or a GPU (set_follower.cpp):
// requests hand in their latencies, a period's tick feeds them to the SLO controller and decides.
// Applying a decision (the plan set's switch_to), logging it and the metrics are the caller's
// (plan_set_serving.cpp); so the loop is unit-tested with a clock of the test's own.
#pragma once

#include <torch_tensorrt/executorch/SloController.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "set_parameters.h"

namespace trtet_triton {

namespace slo = torch_tensorrt::executorch_backend::slo;

// Note [following the load]
// -------------------------
// One controller per plan set (per device), fed every successful request's latency: the request's
// compute time (from just before the method's execute to after its stream is waited for, and any
// late output copies: Triton's compute_infer), not its queue time, which the plan's curves do not
// measure. A request only appends (model, latency, time) to a buffer under a short lock (at most
// kMaxPending between two ticks; more are dropped and counted); it never decides or waits for a
// decision. Every slo_interval_ms a background thread of the set takes the buffer, feeds it to the
// controller in time order (a late sample's time is raised to the latest fed, as the controller
// takes time forward only) and decides; a decision that switched is applied by the caller. Times are
// seconds on the steady clock the requests' statistics use.
// When no plan meets every target the controller keeps (or moves to) the best one; the tick says to
// warn the first time, whenever the unmet models change, and at most every kWarnEvery_s otherwise.
// The targets are the models of the set now loaded with slo_p99_us; a model's load or unload makes
// the controller again with the targets then (keeping the current plan; the samples start over).
class LoadFollower {
 public:
  static constexpr std::size_t kMaxPending = 1u << 18;
  static constexpr double kWarnEvery_s = 10.0;

  LoadFollower(std::optional<slo::Ladder> ladder, SetControl control, std::string initial_plan);
  LoadFollower(const LoadFollower&) = delete;
  LoadFollower& operator=(const LoadFollower&) = delete;

  // The controller for `targets` (none: no controller, and requests hand in nothing), starting on
  // `current_plan`. "" or why not (then nothing changes).
  std::string set_targets(const std::vector<slo::Target>& targets, const std::string& current_plan);
  // A model's index in the ladder (what add() takes); nullopt without a ladder or for another name.
  std::optional<std::size_t> model_index(const std::string& model) const;

  // One request of model `index` that took `latency_us` and finished at `time_s`. Cheap; any thread.
  void add(std::size_t index, double latency_us, double time_s);

  struct Tick {
    bool decided = false;
    slo::Decision decision;
    bool warn = false;            // no plan meets every target: log it now
    bool feasible_again = false;  // every target can be met again after a warning
    std::string error;            // what the controller refused
    std::size_t dropped = 0;      // samples dropped (the buffer was full) since the last tick
  };
  // One period's work at `now_s`.
  Tick tick(double now_s);

  // After a decision that switched could not be applied: the controller goes back to `plan`.
  void undo_switch(const std::string& plan);

  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }
  const SetControl& control() const noexcept { return control_; }

 private:
  struct Sample {
    std::size_t index;
    double latency_us;
    double time_s;
  };
  std::optional<slo::Ladder> ladder_;
  SetControl control_;
  std::atomic<bool> active_{false};

  std::mutex pending_mutex_;  // requests' side
  std::vector<Sample> pending_;
  std::size_t dropped_ = 0;

  std::mutex control_mutex_;  // the controller's side
  std::optional<slo::SloController> controller_;
  std::string plan_;  // the current plan while there is no controller
  double latest_s_ = 0;
  std::optional<double> warned_at_;
  std::vector<std::string> warned_unmet_;
  bool infeasible_ = false;
};

// The controller's options from the set's parameters.
slo::ControllerOptions controller_options(const SetControl& control);

// Whether some plan of `ladder` meets `model`'s p99 target at its minimum rate alone: "" if one does,
// else the reason (the best plan and what it predicts), for the load's log.
std::string target_alone_unmet(const slo::Ladder& ladder, const std::string& model, double p99_us, double min_rate);

}  // namespace trtet_triton
