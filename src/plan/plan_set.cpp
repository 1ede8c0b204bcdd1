// Plan sets as data (torch_tensorrt/executorch/PlanSet.h): the "trtet-plan-set" file read from
// untrusted text and written, the set's rules, and its check against a GPU. Applying a set is
// plan_set_partitions.cpp.
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "plan/json.h"
#include "plan/plan_set_rules.h"
#include "plan/rules.h"

namespace torch_tensorrt::executorch_backend {
namespace plan {
namespace {

constexpr char kSetFormat[] = "trtet-plan-set";

// The names a plan hands out: its partitions', then its remainder's.
std::set<std::string> models_of(const SetPlan& p) {
  std::set<std::string> names;
  for (const PlanPartition& part : p.partitions) names.insert(part.name);
  if (!p.remainder_name.empty()) names.insert(p.remainder_name);
  return names;
}

// The optional "curves" object of a plan: model -> [{"rate_per_s", "p99_us"}, ...].
std::string read_curves(const json& plan, const std::string& where, std::vector<ModelCurve>& out) {
  if (!plan.contains("curves")) return "";
  const json& curves = plan["curves"];
  if (!curves.is_object()) return format("%s.curves must be an object of model: curve", where.c_str());
  if (curves.size() > kMaxPartitions + 1) return format("%s.curves names %zu models; at most %zu", where.c_str(), curves.size(), kMaxPartitions + 1);
  for (auto it = curves.begin(); it != curves.end(); ++it) {
    ModelCurve curve;
    const std::string at = where + ".curves";
    std::string problem = Reader::text(json(it.key()), at + " key", 64, curve.model);
    if (!problem.empty()) return problem;
    if (!valid_name(curve.model)) return format("%s: a model name must be 1 to 64 of A-Z a-z 0-9 _ . -", at.c_str());
    const json& points = it.value();
    const std::string of = at + "." + curve.model;
    if (!points.is_array() || points.empty() || points.size() > kMaxCurvePoints) {
      return format("%s must be an array of 1 to %zu points", of.c_str(), kMaxCurvePoints);
    }
    curve.points.reserve(points.size());
    for (std::size_t k = 0; k < points.size(); ++k) {
      const std::string point = format("%s[%zu]", of.c_str(), k);
      problem = Reader::keys(points[k], point.c_str(), {"rate_per_s", "p99_us"}, {});
      slo::CurvePoint cp;
      if (problem.empty()) problem = Reader::number(points[k]["rate_per_s"], point + ".rate_per_s", cp.rate_per_s);
      if (problem.empty()) problem = Reader::number(points[k]["p99_us"], point + ".p99_us", cp.p99_us);
      if (problem.empty() && k > 0 && cp.rate_per_s <= curve.points.back().rate_per_s) {
        problem = format("%s: rates must rise from point to point", of.c_str());
      }
      if (!problem.empty()) return problem;
      curve.points.push_back(cp);
    }
    out.push_back(std::move(curve));
  }
  return "";
}

ordered_json curves_to_json(const std::vector<ModelCurve>& curves) {
  ordered_json object = ordered_json::object();
  for (const ModelCurve& c : curves) {
    ordered_json points = ordered_json::array();
    for (const slo::CurvePoint& p : c.points) points.push_back({{"rate_per_s", p.rate_per_s}, {"p99_us", p.p99_us}});
    object[c.model] = std::move(points);
  }
  return object;
}

std::string quoted(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "'" : ", '") + n + "'";
  return text.empty() ? std::string("none") : text;
}

}  // namespace

std::string set_problem(const PlanSet& set) {
  if (set.plans.empty() || set.plans.size() > kMaxSetPlans) {
    return format("a plan set holds 1 to %zu plans, this one %zu", kMaxSetPlans, set.plans.size());
  }
  std::set<std::string> names;
  std::set<std::string> first_models;
  for (std::size_t i = 0; i < set.plans.size(); ++i) {
    const SetPlan& p = set.plans[i];
    if (!valid_name(p.name)) return format("plans[%zu].name must be 1 to 64 of A-Z a-z 0-9 _ . -", i);
    if (!names.insert(p.name).second) return format("two plans are named '%s'", p.name.c_str());
    const std::string problem = device_plan_problem(set.device_plan(i));
    if (!problem.empty()) return format("plan '%s': %s", p.name.c_str(), problem.c_str());
    const std::set<std::string> models = models_of(p);
    std::set<std::string> curved;
    for (const ModelCurve& c : p.curves) {
      if (models.count(c.model) == 0) {
        return format("plan '%s' has a curve for '%s', which it does not name", p.name.c_str(), c.model.c_str());
      }
      if (!curved.insert(c.model).second) return format("plan '%s' has two curves for '%s'", p.name.c_str(), c.model.c_str());
      if (c.points.empty() || c.points.size() > kMaxCurvePoints) {
        return format("plan '%s': the curve of '%s' holds 1 to %zu points", p.name.c_str(), c.model.c_str(), kMaxCurvePoints);
      }
      for (std::size_t k = 0; k < c.points.size(); ++k) {
        const slo::CurvePoint& q = c.points[k];
        if (!std::isfinite(q.rate_per_s) || !std::isfinite(q.p99_us) || q.rate_per_s < 0 || q.p99_us < 0 ||
            (k > 0 && q.rate_per_s <= c.points[k - 1].rate_per_s)) {
          return format("plan '%s': the curve of '%s' needs finite, non-negative values and rising rates", p.name.c_str(),
                        c.model.c_str());
        }
      }
    }
    if (i == 0) {
      first_models = models;
      continue;
    }
    if (models != first_models) {
      std::set<std::string> missing, extra;
      for (const std::string& m : first_models) {
        if (models.count(m) == 0) missing.insert(m);
      }
      for (const std::string& m : models) {
        if (first_models.count(m) == 0) extra.insert(m);
      }
      return format("plan '%s' does not name the models plan '%s' names: every plan of a set names the same models "
                    "(missing: %s; not in '%s': %s)",
                    p.name.c_str(), set.plans[0].name.c_str(), quoted(missing).c_str(), set.plans[0].name.c_str(),
                    quoted(extra).c_str());
    }
  }
  return "";
}

Error set_error(const Error& e) {
  static const std::string kPrefix = "partition plan: ";
  std::string message = e.message();
  if (message.rfind(kPrefix, 0) == 0) message = "plan set: " + message.substr(kPrefix.size());
  return Error(e.code(), std::move(message), e.limits(), e.closest_valid());
}

}  // namespace plan

namespace {

using namespace plan;  // the format's rules (plan/rules.h), its JSON (plan/json.h), the set's (plan/plan_set_rules.h)

Result<PlanSet> set_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the plan set", {"format", "version", "gpu", "plans"}, {}));
  if (!root["format"].is_string() || root["format"].get_ref<const std::string&>() != kSetFormat) {
    return invalid(format("\"format\" must be \"%s\"", kSetFormat));
  }
  unsigned version = 0;
  TRTET_PLAN_TRY(Reader::count(root["version"], "version", version));
  if (version != static_cast<unsigned>(kPlanSetVersion)) {
    return invalid(format("version %u of %s; this library reads version %d", version, kSetFormat, kPlanSetVersion));
  }
  PlanSet set;
  TRTET_PLAN_TRY(read_gpu(root["gpu"], set.gpu));
  const json& plans = root["plans"];
  if (!plans.is_array()) return invalid("\"plans\" must be an array");
  if (plans.empty() || plans.size() > kMaxSetPlans) {  // counted before any is read
    return invalid(format("a plan set holds 1 to %zu plans, this one %zu", kMaxSetPlans, plans.size()));
  }
  set.plans.reserve(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const json& entry = plans[i];
    const std::string where = format("plans[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"name", "partitions"}, {"remainder", "curves"}));
    SetPlan p;
    TRTET_PLAN_TRY(Reader::text(entry["name"], where + ".name", 64, p.name));
    std::string problem = read_partitions(entry["partitions"], p.partitions);
    if (problem.empty()) problem = read_remainder(entry, p.remainder_name);
    if (problem.empty()) problem = read_curves(entry, where, p.curves);
    if (!problem.empty()) return invalid(format("%s: %s", where.c_str(), problem.c_str()));
    set.plans.push_back(std::move(p));
  }
  TRTET_PLAN_TRY(set_problem(set));
  return set;
}

Result<PlanSet> parse_set(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    return set_from_json(*root);
  } catch (const std::exception& e) {  // nothing above should throw; a set is never a crash
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

Result<std::string> set_json(const PlanSet& set) {
  try {
    TRTET_PLAN_TRY(set_problem(set));
    ordered_json root;
    root["format"] = kSetFormat;
    root["version"] = kPlanSetVersion;
    root["gpu"] = gpu_to_json(set.gpu);
    ordered_json plans = ordered_json::array();
    for (const SetPlan& p : set.plans) {
      ordered_json plan = {{"name", p.name},
                           {"partitions", partitions_to_json(p.partitions)},
                           {"remainder", p.remainder_name.empty() ? ordered_json(nullptr) : ordered_json(p.remainder_name)}};
      if (!p.curves.empty()) plan["curves"] = curves_to_json(p.curves);
      plans.push_back(std::move(plan));
    }
    root["plans"] = std::move(plans);
    return root.dump(2) + "\n";
  } catch (const std::exception& e) {  // invalid UTF-8 in a string
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

Result<std::vector<std::vector<unsigned>>> check_set(const PlanSet& set, const PlanGpu& gpu) {
  try {
    TRTET_PLAN_TRY(set_problem(set));
    std::vector<std::vector<unsigned>> counts;
    for (std::size_t i = 0; i < set.plans.size(); ++i) {
      auto checked = check_on_gpu(set.device_plan(i), gpu);
      if (!checked.ok()) return within(checked.error(), format("plan '%s'", set.plans[i].name.c_str()));
      counts.push_back(std::move(*checked));
    }
    return counts;
  } catch (const std::exception& e) {
    return invalid(std::string("checking the plan set: ") + e.what());
  }
}

}  // namespace

const SetPlan* PlanSet::find(std::string_view name) const noexcept {
  for (const SetPlan& p : plans) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

DevicePlan PlanSet::device_plan(std::size_t index) const {
  DevicePlan d;
  d.gpu = gpu;
  if (index < plans.size()) {
    d.partitions = plans[index].partitions;
    d.remainder_name = plans[index].remainder_name;
  }
  return d;
}

Result<PlanSet> parse_plan_set(std::string_view text) {
  auto set = parse_set(text);
  if (!set.ok()) return set_error(set.error());
  return set;
}

Result<PlanSet> read_plan_set(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return set_error(text.error());
  auto set = parse_plan_set(*text);
  if (!set.ok()) return in_file(set.error(), path);
  return set;
}

Result<std::string> plan_set_json(const PlanSet& set) {
  auto text = set_json(set);
  if (!text.ok()) return set_error(text.error());
  return text;
}

Result<slo::Ladder> plan_set_ladder(const PlanSet& set) {
  const std::string problem = set_problem(set);
  if (!problem.empty()) return set_error(invalid(problem));
  std::vector<slo::LadderPlan> plans;
  for (const SetPlan& p : set.plans) {
    slo::LadderPlan plan{p.name, {}};
    unsigned taken = 0;
    for (const PlanPartition& part : p.partitions) taken += part.sms;
    std::vector<std::pair<std::string, unsigned>> shares;
    for (const PlanPartition& part : p.partitions) shares.emplace_back(part.name, part.sms);
    if (!p.remainder_name.empty()) shares.emplace_back(p.remainder_name, set.gpu.sm_count > taken ? set.gpu.sm_count - taken : 0);
    for (const auto& [model, sms] : shares) {
      const ModelCurve* curve = nullptr;
      for (const ModelCurve& c : p.curves) {
        if (c.model == model) curve = &c;
      }
      if (curve == nullptr) {
        return Error(ErrorCode::kInvalidArgument,
                     "plan set: plan '" + p.name + "' has no curve for '" + model +
                         "': the SLO controller predicts from each model's measured curve on each plan (trtet-plan "
                         "measures them)");
      }
      plan.models.push_back(slo::ModelShare{model, sms, curve->points});
    }
    plans.push_back(std::move(plan));
  }
  auto ladder = slo::Ladder::make(std::move(plans), set.gpu.sm_count);
  if (!ladder.ok()) return Error(ladder.error().code(), "plan set: " + ladder.error().message());
  return ladder;
}

Result<std::vector<std::vector<unsigned>>> check_plan_set(const PlanSet& set, const PlanGpu& gpu) {
  auto counts = check_set(set, gpu);
  if (!counts.ok()) return set_error(counts.error());
  return counts;
}

}  // namespace torch_tensorrt::executorch_backend
