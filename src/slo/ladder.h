// A ladder: the plans of a plan set as data. Each plan gives every model its SM count and a measured
// latency curve (p99 in µs at a rate in calls/s, from trtet-plan's measurements); a prediction between
// two points is linear, below the first point it is the first point's p99, and beyond the last point
// the plan is infeasible for that model (nothing was measured there). Pure: no GPU.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

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

}  // namespace torch_tensorrt::executorch_backend::slo
