#include "set_follower.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace trtet_triton {

// ---- the controller's loop (Note [following the load], set_follower.h) ----

LoadFollower::LoadFollower(std::optional<slo::Ladder> ladder, SetControl control, std::string initial_plan)
    : ladder_(std::move(ladder)), control_(control), plan_(std::move(initial_plan)) {}

std::string LoadFollower::set_targets(const std::vector<slo::Target>& targets, const std::string& current_plan) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  {
    std::lock_guard<std::mutex> pending(pending_mutex_);  // the samples start over with the targets
    pending_.clear();
  }
  if (targets.empty()) {
    controller_.reset();
    plan_ = current_plan;
    active_.store(false, std::memory_order_relaxed);
    return "";
  }
  if (!ladder_.has_value()) return "the plan set has no latency curves; a target needs them";
  auto made = slo::SloController::make(*ladder_, targets, current_plan, controller_options(control_));
  if (!made.ok()) return made.error().message();
  controller_.emplace(std::move(*made));
  plan_ = current_plan;
  warned_at_.reset();
  warned_unmet_.clear();
  infeasible_ = false;
  active_.store(true, std::memory_order_relaxed);
  return "";
}

std::optional<std::size_t> LoadFollower::model_index(const std::string& model) const {
  if (!ladder_.has_value()) return std::nullopt;
  return ladder_->find_model(model);
}

void LoadFollower::add(std::size_t index, double latency_us, double time_s) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(pending_mutex_);
  if (pending_.size() >= kMaxPending) {
    ++dropped_;
    return;
  }
  pending_.push_back(Sample{index, latency_us, time_s});
}

LoadFollower::Tick LoadFollower::tick(double now_s) {
  Tick tick;
  std::vector<Sample> samples;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    samples.swap(pending_);
    pending_.reserve(std::min<std::size_t>(samples.size(), kMaxPending));
    tick.dropped = dropped_;
    dropped_ = 0;
  }
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!controller_.has_value()) return tick;
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.time_s < b.time_s; });
  const auto& models = ladder_->models();
  for (const Sample& s : samples) {
    if (s.index >= models.size()) continue;
    const double time = std::max(s.time_s, latest_s_);
    const auto added = controller_->add_sample(models[s.index], s.latency_us, time);
    if (added.ok()) latest_s_ = time;
  }
  now_s = std::max(now_s, latest_s_);
  auto decided = controller_->decide(now_s);
  if (!decided.ok()) {
    tick.error = decided.error().message();
    return tick;
  }
  latest_s_ = now_s;
  tick.decided = true;
  tick.decision = std::move(*decided);
  plan_ = tick.decision.plan_name;
  if (!tick.decision.feasible) {
    tick.warn = !infeasible_ || tick.decision.unmet != warned_unmet_ || !warned_at_.has_value() ||
                now_s - *warned_at_ >= kWarnEvery_s;
    if (tick.warn) {
      warned_at_ = now_s;
      warned_unmet_ = tick.decision.unmet;
    }
    infeasible_ = true;
  } else if (infeasible_) {
    tick.feasible_again = true;
    infeasible_ = false;
    warned_unmet_.clear();
  }
  return tick;
}

void LoadFollower::undo_switch(const std::string& plan) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  plan_ = plan;
  if (controller_.has_value()) (void)controller_->set_current(plan);
}

slo::ControllerOptions controller_options(const SetControl& control) {
  slo::ControllerOptions options;
  options.window_s = control.window_s;
  options.margin = control.margin;
  options.confirm = control.confirm;
  options.min_dwell_s = control.dwell_s;
  options.min_samples = control.min_samples;
  return options;
}

std::string target_alone_unmet(const slo::Ladder& ladder, const std::string& model, double p99_us, double min_rate) {
  const auto m = ladder.find_model(model);
  if (!m.has_value()) return "the plan set has no model '" + model + "'";
  std::optional<std::size_t> best;
  std::optional<double> best_p99;
  for (std::size_t p = 0; p < ladder.size(); ++p) {
    const auto predicted = ladder.predict(p, *m, min_rate);
    if (!predicted.has_value()) continue;
    if (*predicted <= p99_us) return "";
    if (!best_p99.has_value() || *predicted < *best_p99) {
      best = p;
      best_p99 = predicted;
    }
  }
  char text[256];
  if (!best.has_value()) {
    std::snprintf(text, sizeof text, "no plan's measured curve reaches %.6g calls/s", min_rate);
    return text;
  }
  std::snprintf(text, sizeof text, "the best, plan '%s', predicts a p99 of %.6g us at %.6g calls/s",
                ladder.plan(*best).name.c_str(), *best_p99, min_rate);
  return text;
}

}  // namespace trtet_triton
