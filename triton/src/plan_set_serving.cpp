#include "plan_set_serving.h"

#include <chrono>
#include <utility>

#include "metrics.h"

namespace trtet_triton {

// ---- a plan set served on one device (plan_set_serving.h) ----

namespace {

struct SetFamilies {
  TRITONSERVER_MetricFamily* plan = nullptr;
  TRITONSERVER_MetricFamily* switches = nullptr;
  TRITONSERVER_MetricFamily* infeasible = nullptr;
};
SetFamilies g_families;  // made in TRITONBACKEND_Initialize, deleted in TRITONBACKEND_Finalize

// A series of `family` with `labels`; null without the family or where the server refuses (logged).
TRITONSERVER_Metric* series(TRITONSERVER_MetricFamily* family, const MetricLabels& labels) {
  TRITONSERVER_Metric* metric = nullptr;
  TRITONSERVER_Error* e = new_series(&metric, family, labels);
  if (e != nullptr) {
    log(TRITONSERVER_LOG_WARN, std::string("plan set metric not made: ") + TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
  return metric;
}

}  // namespace

void delete_plan_set_metric_families() {
  for (TRITONSERVER_MetricFamily** f : {&g_families.plan, &g_families.switches, &g_families.infeasible}) drop(*f);
}

void make_plan_set_metric_families() {
  const struct {
    TRITONSERVER_MetricFamily** family;
    TRITONSERVER_MetricKind kind;
    const char* name;
    const char* help;
  } families[] = {
      {&g_families.plan, TRITONSERVER_METRIC_KIND_GAUGE, "trtet_plan_set_plan",
       "Index in its plan set of the plan the model's next call runs on (models following a plan set)"},
      {&g_families.switches, TRITONSERVER_METRIC_KIND_COUNTER, "trtet_plan_set_switches",
       "Plan switches the SLO controller of the device's plan set made"},
      {&g_families.infeasible, TRITONSERVER_METRIC_KIND_GAUGE, "trtet_plan_set_infeasible",
       "1 while no plan of the device's plan set meets every model's p99 target, else 0"},
  };
  for (const auto& f : families) {
    TRITONSERVER_Error* e = TRITONSERVER_MetricFamilyNew(f.family, f.kind, f.name, f.help);
    if (e != nullptr) {
      log(TRITONSERVER_LOG_INFO, format("plan set metrics not reported (the log still has every switch): metric family "
                                        "%s: %s",
                                        f.name, TRITONSERVER_ErrorMessage(e)));
      TRITONSERVER_ErrorDelete(e);
      *f.family = nullptr;
      delete_plan_set_metric_families();
      return;
    }
  }
}

SetServing::SetServing(int device, std::string path, std::string text, const et::PlanSet& set,
                       et::PlanSetPartitions parts, SetControl control)
    : device_(device),
      path_(std::move(path)),
      text_(std::move(text)),
      parts_(std::move(parts)),
      follower_(
          [&]() -> std::optional<slo::Ladder> {
            auto ladder = et::plan_set_ladder(set);
            if (ladder.ok()) return std::move(*ladder);
            return std::nullopt;
          }(),
          control, parts_.current()) {
  const std::string gpu = std::to_string(device_);
  switches_ = series(g_families.switches, {{"gpu", gpu}});
  infeasible_ = series(g_families.infeasible, {{"gpu", gpu}});
  set_value(infeasible_, 0);
  thread_ = std::thread([this] { run(); });
}

void SetServing::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

et::PlanSetPartitions SetServing::take_partitions() {
  stop();
  return std::move(parts_);
}

SetServing::~SetServing() {
  stop();
  for (auto& [model, member] : members_) drop(member.plan_gauge);
  drop(switches_);
  drop(infeasible_);
}

std::size_t SetServing::plan_index(const std::string& plan) const {
  const auto& plans = parts_.plans();
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (plans[i] == plan) return i;
  }
  return 0;
}

void SetServing::set_gauges_locked() {
  const double index = static_cast<double>(plan_index(parts_.current()));
  for (auto& [model, member] : members_) set_value(member.plan_gauge, index);
}

std::string SetServing::where(const std::string& set_model) const {
  const std::string plan = parts_.current();
  auto partition = parts_.partition(plan, set_model);
  if (!partition.ok()) return "plan '" + plan + "'";
  return format("%u SMs of plan '%s'", (*partition)->sm_count(), plan.c_str());
}

void SetServing::retarget_locked() {
  std::vector<slo::Target> targets;
  for (const auto& [model, member] : members_) {
    if (member.target.has_value()) targets.push_back(*member.target);
  }
  const std::string why = follower_.set_targets(targets, parts_.current());
  if (!why.empty()) {
    log(TRITONSERVER_LOG_ERROR, format("plan set %s on GPU %d: the controller keeps its targets: %s", path_.c_str(),
                                       device_, why.c_str()));
  }
}

TRITONSERVER_Error* SetServing::join(const std::string& model, const std::string& set_model,
                                     std::optional<slo::Target> target) {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  std::vector<slo::Target> targets;
  for (const auto& [name, member] : members_) {
    if (member.target.has_value()) targets.push_back(*member.target);
  }
  if (target.has_value()) targets.push_back(*target);
  const std::string why = follower_.set_targets(targets, parts_.current());
  if (!why.empty()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("plan set %s on GPU %d: model '%s': %s", path_.c_str(), device_, model.c_str(), why.c_str()));
  }
  Member member{set_model, target, series(g_families.plan, {{"model", model}, {"gpu", std::to_string(device_)}})};
  set_value(member.plan_gauge, static_cast<double>(plan_index(parts_.current())));
  members_[model] = std::move(member);
  return nullptr;
}

void SetServing::leave(const std::string& model) {
  std::lock_guard<std::mutex> lock(apply_mutex_);
  auto it = members_.find(model);
  if (it == members_.end()) return;
  drop(it->second.plan_gauge);
  const bool had_target = it->second.target.has_value();
  members_.erase(it);
  if (had_target) retarget_locked();
}

void SetServing::apply(const LoadFollower::Tick& tick) {
  if (tick.dropped > 0) {
    log(TRITONSERVER_LOG_WARN, format("plan set %s on GPU %d: %zu latencies dropped since the last decision (more than "
                                      "%zu in one period)",
                                      path_.c_str(), device_, tick.dropped, LoadFollower::kMaxPending));
  }
  if (!tick.error.empty()) {
    log(TRITONSERVER_LOG_ERROR, format("plan set %s on GPU %d: no decision: %s", path_.c_str(), device_, tick.error.c_str()));
    return;
  }
  if (!tick.decided) return;
  const slo::Decision& d = tick.decision;
  if (d.switched) {
    const std::string from = parts_.current();
    const et::Status switched = parts_.switch_to(d.plan_name);
    if (!switched.ok()) {
      follower_.undo_switch(from);
      log(TRITONSERVER_LOG_ERROR, format("plan set %s on GPU %d: switching to plan '%s' failed, staying on '%s': %s",
                                         path_.c_str(), device_, d.plan_name.c_str(), from.c_str(),
                                         switched.message().c_str()));
    } else {
      increment(switches_);
      set_gauges_locked();
      log(TRITONSERVER_LOG_INFO, format("plan set %s on GPU %d: switched to plan '%s' (index %zu): %s", path_.c_str(),
                                        device_, d.plan_name.c_str(), plan_index(d.plan_name), d.message.c_str()));
    }
  }
  set_value(infeasible_, d.feasible ? 0 : 1);
  if (tick.warn) {
    std::string unmet;
    for (const std::string& m : d.unmet) unmet += (unmet.empty() ? "'" : ", '") + m + "'";
    log(TRITONSERVER_LOG_WARN, format("plan set %s on GPU %d: no plan meets every target (unmet: %s); the controller "
                                      "keeps the best plan, '%s': %s",
                                      path_.c_str(), device_, unmet.c_str(), parts_.current().c_str(), d.message.c_str()));
  } else if (tick.feasible_again) {
    log(TRITONSERVER_LOG_INFO, format("plan set %s on GPU %d: every target can be met again (plan '%s')", path_.c_str(),
                                      device_, parts_.current().c_str()));
  }
}

void SetServing::run() {
  const auto period = std::chrono::milliseconds(follower_.control().interval_ms);
  std::unique_lock<std::mutex> stop_lock(stop_mutex_);
  while (!stop_cv_.wait_for(stop_lock, period, [this] { return stop_; })) {
    stop_lock.unlock();
    {
      std::lock_guard<std::mutex> lock(apply_mutex_);
      if (follower_.active()) {
        try {
          apply(follower_.tick(static_cast<double>(now_ns()) / 1e9));
        } catch (const std::exception& e) {  // a full heap while deciding: the next period tries again
          log(TRITONSERVER_LOG_ERROR, format("plan set %s on GPU %d: deciding: %s", path_.c_str(), device_, e.what()));
        }
      }
    }
    stop_lock.lock();
  }
}

}  // namespace trtet_triton
