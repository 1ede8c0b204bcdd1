#include <torch_tensorrt/executorch/SloController.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "common/escape.h"
#include "common/status.h"

namespace torch_tensorrt::executorch_backend::slo {
namespace {

std::string quoted(std::string_view text) { return "\"" + escape_for_message(text, 64) + "\""; }

// Nearest-rank p99 of `values` (non-empty).
double p99_of(std::vector<double> values) {
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(values.size())));
  const std::size_t index = rank == 0 ? 0 : rank - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

std::string format(const char* fmt, double a, double b = 0) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, fmt, a, b);  // a format with one conversion ignores b
  return buffer;
}

}  // namespace

Result<SloController> SloController::make(Ladder ladder, std::vector<Target> targets,
                                          std::string_view initial_plan, ControllerOptions options) {
  TRTET_CHECK_OR_RETURN(std::isfinite(options.window_s) && options.window_s > 0, kInvalidArgument,
                        "slo controller: window_s %g is not a positive number of seconds", options.window_s);
  TRTET_CHECK_OR_RETURN(std::isfinite(options.margin) && options.margin >= 0, kInvalidArgument,
                        "slo controller: margin %g is negative or not finite", options.margin);
  TRTET_CHECK_OR_RETURN(options.confirm >= 1, kInvalidArgument, "slo controller: confirm is 0 (at least 1)");
  TRTET_CHECK_OR_RETURN(std::isfinite(options.min_dwell_s) && options.min_dwell_s >= 0, kInvalidArgument,
                        "slo controller: min_dwell_s %g is negative or not finite", options.min_dwell_s);
  TRTET_CHECK_OR_RETURN(!targets.empty(), kInvalidArgument, "slo controller: no targets");
  std::vector<std::optional<Target>> by_model(ladder.models().size());
  for (Target& target : targets) {
    const std::string m = quoted(target.model);
    std::optional<std::size_t> index = ladder.find_model(target.model);
    TRTET_CHECK_OR_RETURN(index.has_value(), kNotFound,
                          "slo controller: a target names model %s, which no plan of the ladder has", m.c_str());
    TRTET_CHECK_OR_RETURN(!by_model[*index].has_value(), kInvalidArgument,
                          "slo controller: model %s has two targets", m.c_str());
    TRTET_CHECK_OR_RETURN(std::isfinite(target.p99_us) && target.p99_us > 0, kInvalidArgument,
                          "slo controller: model %s: the p99 target %g us is not a positive number", m.c_str(),
                          target.p99_us);
    TRTET_CHECK_OR_RETURN(std::isfinite(target.min_rate_per_s) && target.min_rate_per_s >= 0, kInvalidArgument,
                          "slo controller: model %s: the minimum rate %g calls/s is negative or not finite",
                          m.c_str(), target.min_rate_per_s);
    by_model[*index] = std::move(target);
  }
  std::optional<std::size_t> initial = ladder.find_plan(initial_plan);
  TRTET_CHECK_OR_RETURN(initial.has_value(), kNotFound, "slo controller: the initial plan %s is not in the ladder",
                        quoted(initial_plan).c_str());
  SloController controller(std::move(ladder));
  controller.targets_ = std::move(by_model);
  controller.options_ = options;
  controller.samples_.resize(controller.ladder_.models().size());
  controller.current_ = *initial;
  controller.streak_plan_ = *initial;
  return controller;
}

Status SloController::add_sample(std::string_view model, double latency_us, double time_s) {
  std::optional<std::size_t> index = ladder_.find_model(model);
  TRTET_CHECK_OR_RETURN(index.has_value(), kNotFound, "slo controller: a sample of model %s, which no plan has",
                        quoted(model).c_str());
  TRTET_CHECK_OR_RETURN(std::isfinite(latency_us) && latency_us >= 0, kInvalidArgument,
                        "slo controller: model %s: latency %g us is negative or not finite",
                        quoted(model).c_str(), latency_us);
  TRTET_CHECK_OR_RETURN(std::isfinite(time_s) && time_s >= 0, kInvalidArgument,
                        "slo controller: model %s: time %g s is negative or not finite", quoted(model).c_str(),
                        time_s);
  TRTET_CHECK_OR_RETURN(!first_time_ || time_s >= latest_time_, kInvalidArgument,
                        "slo controller: model %s: time %g s is before the latest sample or decision (%g s)",
                        quoted(model).c_str(), time_s, latest_time_);
  if (!first_time_) first_time_ = time_s;
  latest_time_ = time_s;
  samples_[*index].emplace_back(time_s, latency_us);
  prune(time_s);
  return Status::Ok();
}

Status SloController::set_current(std::string_view plan) {
  std::optional<std::size_t> index = ladder_.find_plan(plan);
  TRTET_CHECK_OR_RETURN(index.has_value(), kNotFound, "slo controller: plan %s is not in the ladder",
                        quoted(plan).c_str());
  if (*index != current_) {
    current_ = *index;
    last_switch_ = latest_time_;
    streak_ = 0;
    streak_plan_ = current_;
  }
  return Status::Ok();
}

void SloController::prune(double now_s) {
  const double oldest = now_s - options_.window_s;
  for (auto& samples : samples_) {
    while (!samples.empty() && samples.front().first <= oldest) samples.pop_front();
  }
}

double SloController::headroom_of(std::size_t plan, const std::vector<double>& rates) const {
  double headroom = std::numeric_limits<double>::infinity();
  for (std::size_t m = 0; m < targets_.size(); ++m) {
    if (!targets_[m]) continue;
    std::optional<double> predicted = ladder_.predict(plan, m, rates[m]);
    if (!predicted) return 0;
    const double ratio = *predicted <= 0 ? std::numeric_limits<double>::infinity() : targets_[m]->p99_us / *predicted;
    headroom = std::min(headroom, ratio);
  }
  return headroom;
}

Result<Decision> SloController::decide(double now_s) {
  TRTET_CHECK_OR_RETURN(std::isfinite(now_s) && now_s >= 0, kInvalidArgument,
                        "slo controller: decision time %g s is negative or not finite", now_s);
  TRTET_CHECK_OR_RETURN(!first_time_ || now_s >= latest_time_, kInvalidArgument,
                        "slo controller: decision time %g s is before the latest sample or decision (%g s)", now_s,
                        latest_time_);
  if (!first_time_) first_time_ = now_s;
  latest_time_ = now_s;
  prune(now_s);

  Decision decision;
  // A model's rate is its calls in the window over the window. In the first window (since the first
  // call or decision) the span so far stands for the window once it holds min_samples calls of the
  // model: before that, too few calls to tell a rate from a burst (two calls a millisecond apart at
  // start-up read as 1000 calls/s and moved the plan at the lightest load), and they count over the
  // whole window.
  const double span = now_s - *first_time_;
  std::vector<double> rates(samples_.size(), 0);
  bool observed_miss = false;
  for (std::size_t m = 0; m < samples_.size(); ++m) {
    ModelWindow seen;
    seen.model = ladder_.models()[m];
    seen.samples = samples_[m].size();
    const bool early = span > 0 && span < options_.window_s && seen.samples >= std::max<std::size_t>(options_.min_samples, 1);
    seen.rate_per_s = static_cast<double>(seen.samples) / (early ? span : options_.window_s);
    if (seen.samples > 0 && seen.samples >= options_.min_samples) {
      std::vector<double> latencies;
      latencies.reserve(seen.samples);
      for (const auto& sample : samples_[m]) latencies.push_back(sample.second);
      seen.p99_us = p99_of(std::move(latencies));
      if (targets_[m] && *seen.p99_us > targets_[m]->p99_us) observed_miss = true;
    }
    rates[m] = std::max(seen.rate_per_s, targets_[m] ? targets_[m]->min_rate_per_s : 0.0);
    decision.models.push_back(std::move(seen));
  }

  std::vector<double> headrooms(ladder_.size());
  for (std::size_t p = 0; p < ladder_.size(); ++p) headrooms[p] = headroom_of(p, rates);
  std::size_t candidate = current_;
  for (std::size_t p = 0; p < ladder_.size(); ++p) {
    if (headrooms[p] > headrooms[candidate]) candidate = p;
  }
  const double current_headroom = headrooms[current_];
  const bool current_misses = current_headroom < 1 || observed_miss;
  decision.candidate = candidate;
  decision.candidate_headroom = headrooms[candidate];
  decision.feasible = headrooms[candidate] >= 1;

  const bool better = candidate != current_ && headrooms[candidate] > current_headroom * (1 + options_.margin);
  if (better && candidate == streak_plan_) {
    ++streak_;
  } else if (better) {
    streak_plan_ = candidate;
    streak_ = 1;
  } else {
    streak_plan_ = current_;
    streak_ = 0;
  }
  const bool dwelt = !last_switch_ || now_s - *last_switch_ >= options_.min_dwell_s;
  const std::string& from = ladder_.plan(current_).name;
  if (better && (current_misses || streak_ >= options_.confirm) && dwelt) {
    decision.switched = true;
    decision.message = "switch from plan " + quoted(from) + " to " + quoted(ladder_.plan(candidate).name) +
                       format(": headroom %.3g against %.3g", headrooms[candidate], current_headroom) +
                       (current_misses ? " (the current plan misses a target)" : " (won the confirmations in a row)");
    current_ = candidate;
    last_switch_ = now_s;
    streak_ = 0;
    streak_plan_ = current_;
    ++switches_;
  } else {
    decision.message = "stay on plan " + quoted(from) + format(": headroom %.3g, best other %.3g", current_headroom,
                                                               headrooms[candidate]);
    if (better && !dwelt) decision.message += " (a better plan waits for the dwell time)";
    else if (better) decision.message += " (a better plan waits for confirmation)";
  }
  if (!decision.feasible) {
    std::string names;
    for (std::size_t m = 0; m < targets_.size(); ++m) {
      if (!targets_[m]) continue;
      std::optional<double> predicted = ladder_.predict(candidate, m, rates[m]);
      if (predicted && *predicted <= targets_[m]->p99_us) continue;
      decision.unmet.push_back(ladder_.models()[m]);
      if (!names.empty()) names += ", ";
      names += quoted(ladder_.models()[m]) +
               (predicted ? format(" (predicted p99 %.4g us, target %.4g us)", *predicted, targets_[m]->p99_us)
                          : format(" (rate %.4g calls/s beyond the measured curve)", rates[m]));
    }
    decision.message += "; no plan meets every target: the best, plan " + quoted(ladder_.plan(candidate).name) +
                        ", cannot meet model " + names;
  }
  decision.plan = current_;
  decision.plan_name = ladder_.plan(current_).name;
  decision.headroom = headrooms[current_];
  return decision;
}

}  // namespace torch_tensorrt::executorch_backend::slo
