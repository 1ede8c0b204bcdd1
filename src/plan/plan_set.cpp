// Plan sets as data (torch_tensorrt/executorch/PlanSet.h): the "trtet-plan-set" file read from
// untrusted text and written, the set's rules, and its check against a GPU. Applying a set is
// plan_set_partitions.cpp.
#include <torch_tensorrt/executorch/PlanSet.h>

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
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"name", "partitions"}, {"remainder"}));
    SetPlan p;
    TRTET_PLAN_TRY(Reader::text(entry["name"], where + ".name", 64, p.name));
    std::string problem = read_partitions(entry["partitions"], p.partitions);
    if (problem.empty()) problem = read_remainder(entry, p.remainder_name);
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
      plans.push_back({{"name", p.name},
                       {"partitions", partitions_to_json(p.partitions)},
                       {"remainder", p.remainder_name.empty() ? ordered_json(nullptr) : ordered_json(p.remainder_name)}});
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

Result<std::vector<std::vector<unsigned>>> check_plan_set(const PlanSet& set, const PlanGpu& gpu) {
  auto counts = check_set(set, gpu);
  if (!counts.ok()) return set_error(counts.error());
  return counts;
}

}  // namespace torch_tensorrt::executorch_backend
