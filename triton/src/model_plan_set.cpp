#include "model_plan_set.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "model_partitions.h"

namespace trtet_triton {

namespace {

// The set's models: the first plan's partitions, then its remainder (every plan names the same).
std::vector<std::string> set_models(const et::PlanSet& set) {
  std::vector<std::string> models;
  for (const et::PlanPartition& p : set.plans.front().partitions) models.push_back(p.name);
  if (!set.plans.front().remainder_name.empty()) models.push_back(set.plans.front().remainder_name);
  return models;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "'" : ", '") + n + "'";
  return text;
}

}  // namespace

// Reads and checks the plan set the parameters name (no GPU needed): the file (1 MiB at most), the
// set's own rules (each plan's partitions within one split), the model in the set, and the target
// with the set's curves and the controller's options. A target no plan meets at its minimum rate is
// logged here, not refused: the controller keeps the best plan.
TRITONSERVER_Error* read_plan_set_file(ModelState& state, const std::string& model_dir) {
  const SetParameters& params = state.parameters.set;
  if (!params.file.has_value()) return nullptr;
  std::filesystem::path path(*params.file);
  if (path.is_relative()) path = std::filesystem::path(model_dir) / path;
  std::string why;
  std::string text = read_file_text(path.string(), why);
  if (!why.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, "plan_set_file: " + why);
  auto set = et::parse_plan_set(text);
  if (!set.ok()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("plan set file %s: %s", path.c_str(), set.error().message().c_str()));
  }
  const std::string& model = *params.model;
  const std::vector<std::string> models = set_models(*set);
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("plan set file %s has no model '%s' (its models: %s); plan_set_model names this model's "
                        "name there",
                        path.c_str(), model.c_str(), joined(models).c_str()));
  }
  if (params.p99_us.has_value()) {
    auto ladder = et::plan_set_ladder(*set);
    if (!ladder.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("plan set file %s: slo_p99_us needs the set's latency curves: %s", path.c_str(),
                          ladder.error().message().c_str()));
    }
    const slo::Target target{model, *params.p99_us, params.min_rate};
    auto checked = slo::SloController::make(*ladder, {target}, set->plans.front().name, controller_options(params.control));
    if (!checked.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("model '%s', plan set file %s: %s", state.name.c_str(), path.c_str(),
                          checked.error().message().c_str()));
    }
    const std::string unmet = target_alone_unmet(*ladder, model, *params.p99_us, params.min_rate);
    if (!unmet.empty()) {
      log(TRITONSERVER_LOG_WARN,
          format("model '%s': no plan of plan set %s meets its target (slo_p99_us %g at %g calls/s) even alone: %s; "
                 "the controller will keep the best plan it has",
                 state.name.c_str(), path.c_str(), *params.p99_us, params.min_rate, unmet.c_str()));
    }
  }
  state.plan_set = ModelState::SetFile{path.string(), std::move(text), std::move(*set)};
  return nullptr;
}

// Takes (or makes) each device's plan set for the model's instances: one instance per device (the set
// gives each model one stream per plan), one split per device (the set's), the model's name there not
// yet taken, and the controller's options those the set runs with.
TRITONSERVER_Error* acquire_plan_set(ModelState& state) {
  const ModelState::SetFile& file = *state.plan_set;
  const SetParameters& params = state.parameters.set;
  const std::string& model = *params.model;
  std::map<int, int> per_device;
  for (const InstancePlace& place : state.places) ++per_device[place.device];
  for (const auto& [device, count] : per_device) {
    if (count > 1) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("model '%s' has %d instances on GPU %d; a model that follows a plan set has one instance "
                          "per device (the set gives each model one stream per plan)",
                          state.name.c_str(), count, device));
    }
  }
  for (const auto& [device, count] : per_device) {
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    std::shared_ptr<DeviceSplit> split;
    auto existing = g_splits.find(device);
    if (existing != g_splits.end()) {
      split = existing->second;
      if (split->set == nullptr || split->set->text() != file.text) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("GPU %d is already split by %s; one split per device: every model on it must name the same "
                            "plan set file (a second split would share SMs)",
                            device, split->owner.c_str()));
      }
      if (params.control_given && params.control != split->set->control()) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("plan set %s on GPU %d runs its controller with %s (from the model that made it); model '%s' "
                            "gives %s: give the same values, or none",
                            split->set->path().c_str(), device, split->set->control().text().c_str(), state.name.c_str(),
                            params.control.text().c_str()));
      }
    } else {
      // Note [keeping a split for the next load]: an earlier load's partitions of the same set, on
      // its first plan again, or new ones.
      const std::string kept_key = "set\n" + file.text;
      split = take_kept_split(device, kept_key);
      et::PlanSetPartitions parts;
      if (split != nullptr) {
        parts = std::move(split->set_parts);
        const et::Status first = parts.switch_to(file.set.plans.front().name);
        if (!first.ok()) {
          return error(TRITONSERVER_ERROR_INTERNAL, format("plan set %s on GPU %d: the kept partitions: %s",
                                                           file.path.c_str(), device, first.message().c_str()));
        }
        log(TRITONSERVER_LOG_INFO, format("GPU %d: the partitions of plan set %s are an earlier load's, kept for this one",
                                          device, file.path.c_str()));
      } else {
        auto made = et::apply_plan_set(file.set, device);
        if (!made.ok()) {
          return error(triton_code(made.error().code()),
                       format("plan set %s on GPU %d: %s", file.path.c_str(), device, made.error().message().c_str()));
        }
        parts = std::move(*made);
        split = std::make_shared<DeviceSplit>();
        split->device = device;
        split->key = kept_key;
      }
      split->owner = "plan set " + file.path;
      split->plan_text = file.text;
      split->set = std::make_shared<SetServing>(device, file.path, file.text, file.set, std::move(parts), params.control);
      g_splits[device] = split;
      std::string plans;
      for (const et::SetPlan& p : file.set.plans) plans += (plans.empty() ? "'" : ", '") + p.name + "'";
      log(TRITONSERVER_LOG_INFO, format("plan set %s made on GPU %d: plans %s, one split each; plan '%s' current; the "
                                        "controller decides every %u ms (%s)",
                                        file.path.c_str(), device, plans.c_str(), file.set.plans.front().name.c_str(),
                                        params.control.interval_ms, params.control.text().c_str()));
    }
    auto taken = split->taken.find(model);
    TRITONSERVER_Error* refused = nullptr;
    if (taken != split->taken.end()) {
      refused = error(TRITONSERVER_ERROR_INVALID_ARG, format("model '%s' of the plan set on GPU %d is already taken by %s",
                                                             model.c_str(), device, taken->second.c_str()));
    } else {
      std::optional<slo::Target> target;
      if (params.p99_us.has_value()) target = slo::Target{model, *params.p99_us, params.min_rate};
      refused = split->set->join(state.name, model, target);
    }
    if (refused != nullptr) {
      if (split->models == 0) g_splits.erase(device);  // made for this model: it goes (its thread, its splits)
      return refused;
    }
    split->taken[model] = format("model '%s'", state.name.c_str());
    state.partitions_taken[device].push_back(model);
    ++split->models;
    state.splits[device] = split;
    log(TRITONSERVER_LOG_INFO,
        format("model '%s' follows plan set %s on GPU %d as '%s' (%s)", state.name.c_str(), file.path.c_str(), device,
               model.c_str(),
               params.p99_us.has_value()
                   ? format("p99 target %g us at %g calls/s at least", *params.p99_us, params.min_rate).c_str()
                   : "no target of its own: it runs on the plan the others' targets choose"));
  }
  return nullptr;
}

}  // namespace trtet_triton
