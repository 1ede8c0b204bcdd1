#include "plan/plan_set_select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "plan/options.h"

namespace trtet_plan {
namespace {

namespace slo = ex::slo;

ex::Status invalid(const std::string& message) {
  return ex::make_error(ex::ErrorCode::kInvalidArgument, "%s", message.c_str());
}

bool parse_rate(const std::string& text, double& value) {
  if (text.empty() || text.size() > 32) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value) && value >= 0 && value <= 1e9;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

std::string describe_mix(const SetInput& in, const std::vector<double>& mix) {
  std::string text;
  for (std::size_t m = 0; m < mix.size(); ++m) {
    text += (m ? " " : "") + in.models[m].name + "=" + number(mix[m]) + "/s";
  }
  return text;
}

// Each model's rates: `levels` of its range (Note [plan set selection], 1).
std::vector<double> rates_of(const SetModel& model, unsigned levels) {
  if (model.low_per_s == model.high_per_s) return {model.low_per_s};
  std::vector<double> rates;
  for (unsigned j = 0; j < levels; ++j) {
    const double t = static_cast<double>(j) / (levels - 1);
    rates.push_back(model.low_per_s > 0 ? model.low_per_s * std::pow(model.high_per_s / model.low_per_s, t)
                                        : model.high_per_s * t);
  }
  rates.back() = model.high_per_s;
  return rates;
}

ex::Status check_input(const SetInput& in) {
  if (in.models.empty()) return invalid("no model to plan");
  if (in.sizes.empty()) return invalid("no partition size was measured");
  if (in.max_plans < 1 || in.max_plans > ex::kMaxSetPlans) {
    return invalid("--plans " + std::to_string(in.max_plans) + ": a plan set holds 1 to " +
                   std::to_string(ex::kMaxSetPlans) + " plans");
  }
  if (in.max_plans > in.sizes.size()) {
    return invalid("--plans " + std::to_string(in.max_plans) + ": only " + std::to_string(in.sizes.size()) +
                   " partition size(s) are measured; ask for at most that many plans, or measure more sizes (--sizes)");
  }
  if (in.levels < 2 || in.levels > 16) return invalid("--rate-levels " + std::to_string(in.levels) + ": 2 to 16");
  for (std::size_t i = 0; i < in.sizes.size(); ++i) {
    const unsigned s = in.sizes[i];
    if (in.gpu.unit == 0 || s < in.gpu.unit || s % in.gpu.unit != 0 || s > in.gpu.capacity ||
        (i > 0 && s <= in.sizes[i - 1])) {
      return invalid("size " + std::to_string(s) + " SMs: the sizes must rise, each a multiple of " +
                     std::to_string(in.gpu.unit) + " up to " + std::to_string(in.gpu.capacity));
    }
  }
  std::set<std::string> names;
  for (const SetModel& m : in.models) {
    if (!valid_name(m.name) || !names.insert(m.name).second) {
      return invalid("model name '" + m.name + "' is not valid or not unique");
    }
    if (!(m.p99_target_us > 0) || !std::isfinite(m.p99_target_us)) {
      return invalid("model '" + m.name + "': its p99 target must be a positive number of microseconds");
    }
    if (!(m.low_per_s >= 0) || !(m.high_per_s > 0) || m.low_per_s > m.high_per_s || !std::isfinite(m.high_per_s)) {
      return invalid("model '" + m.name + "': its rate range " + number(m.low_per_s) + ":" + number(m.high_per_s) +
                     " must be 0 <= LOW <= HIGH, HIGH > 0");
    }
    if (m.curves.size() != in.sizes.size()) {
      return invalid("model '" + m.name + "' has " + std::to_string(m.curves.size()) + " curves for " +
                     std::to_string(in.sizes.size()) + " measured sizes");
    }
    for (std::size_t i = 0; i < in.sizes.size(); ++i) {
      if (m.curves[i].empty()) {
        return invalid("model '" + m.name + "' has no curve on " + std::to_string(in.sizes[i]) + " SMs");
      }
      if (m.curves[i].size() > ex::kMaxCurvePoints) {
        return invalid("model '" + m.name + "': its curve on " + std::to_string(in.sizes[i]) + " SMs has " +
                       std::to_string(m.curves[i].size()) + " points; a plan set holds at most " +
                       std::to_string(ex::kMaxCurvePoints));
      }
    }
  }
  return ex::Status::Ok();
}

}  // namespace

ex::Result<RateRange> parse_rate_range(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::size_t colon = text.find(':', eq == std::string::npos ? 0 : eq);
  RateRange r;
  if (eq == std::string::npos || colon == std::string::npos) {
    return invalid("--rate '" + text + "': expected MODEL=LOW:HIGH calls/s, e.g. latency=500:4000");
  }
  r.model = text.substr(0, eq);
  if (!valid_name(r.model)) return invalid("--rate '" + text + "': the model's name must be 1 to 64 of A-Z a-z 0-9 _ . -");
  if (!parse_rate(text.substr(eq + 1, colon - eq - 1), r.low_per_s) ||
      !parse_rate(text.substr(colon + 1), r.high_per_s)) {
    return invalid("--rate '" + text + "': LOW and HIGH must be numbers of calls/s in [0, 1e9]");
  }
  if (r.low_per_s > r.high_per_s || r.high_per_s <= 0) {
    return invalid("--rate '" + text + "': LOW must be at most HIGH, and HIGH above 0");
  }
  return r;
}

ex::Result<SetSelection> select_plan_set(const SetInput& in) {
  TRTET_RETURN_IF_ERROR(check_input(in));
  const std::size_t models = in.models.size(), sizes = in.sizes.size();
  std::vector<std::vector<double>> rates(models);
  std::size_t mix_count = 1;
  for (std::size_t m = 0; m < models; ++m) {
    rates[m] = rates_of(in.models[m], in.levels);
    mix_count *= rates[m].size();
    if (mix_count > kMaxMixes) {
      return invalid("the rate ranges make more than " + std::to_string(kMaxMixes) +
                     " mixes of load; give fewer --rate-levels");
    }
  }
  // meets[m][s][level]: model m on size s meets its target at its rate `level` (the SLO controller's prediction).
  std::vector<std::vector<std::vector<char>>> meets(models, std::vector<std::vector<char>>(sizes));
  for (std::size_t m = 0; m < models; ++m) {
    const SetModel& model = in.models[m];
    for (std::size_t s = 0; s < sizes; ++s) {
      auto ladder = slo::Ladder::make({slo::LadderPlan{"size", {slo::ModelShare{model.name, in.sizes[s], model.curves[s]}}}},
                                      std::max(in.gpu.sm_count, in.sizes[s]));
      if (!ladder.ok()) {
        return invalid("model '" + model.name + "': its curve on " + std::to_string(in.sizes[s]) +
                       " SMs: " + ladder.error().message());
      }
      for (double rate : rates[m]) {
        const auto p99 = ladder->predict(0, 0, rate);
        meets[m][s].push_back(p99.has_value() && *p99 <= model.p99_target_us ? 1 : 0);
      }
    }
  }
  SetSelection out;
  std::vector<std::vector<std::size_t>> levels_of;  // per mix, per model: its rate's level
  std::vector<std::vector<std::size_t>> candidates; // size indices per model
  std::set<std::vector<std::size_t>> seen;
  std::vector<std::size_t> level(models, 0);
  auto total = [&](const std::vector<std::size_t>& plan) {
    unsigned sum = 0;
    for (std::size_t s : plan) sum += in.sizes[s];
    return sum;
  };
  for (std::size_t k = 0; k < mix_count; ++k) {
    std::vector<double> mix(models);
    for (std::size_t m = 0; m < models; ++m) mix[m] = rates[m][level[m]];
    std::vector<std::size_t> own(models, sizes);
    std::string missing;
    for (std::size_t m = 0; m < models; ++m) {
      for (std::size_t s = 0; s < sizes && own[m] == sizes; ++s) {
        if (meets[m][s][level[m]]) own[m] = s;
      }
      if (own[m] == sizes) missing += (missing.empty() ? "'" : ", '") + in.models[m].name + "'";
    }
    if (missing.empty() && total(own) > in.gpu.capacity) missing = "the models together";
    if (!missing.empty()) {
      if (out.infeasible++ < 3) {
        out.problems.push_back("no plan meets " + describe_mix(in, mix) + ": " + missing +
                               (missing == "the models together" ? " need more SMs than one split hands out ("
                                                                  + std::to_string(in.gpu.capacity) + ")"
                                                                : " meet(s) the target on no measured size"));
      }
    } else {
      out.mixes.push_back(mix);
      levels_of.push_back(level);
      if (seen.insert(own).second) candidates.push_back(own);
    }
    for (std::size_t m = 0; m < models && ++level[m] == rates[m].size(); ++m) level[m] = 0;
  }
  if (out.infeasible > 3) out.problems.push_back("... " + std::to_string(out.infeasible) + " such mixes in all");
  // One plan for two mixes: the model-by-model maximum, where it fits one split.
  const std::size_t own_count = candidates.size();
  for (std::size_t a = 0; a < own_count && candidates.size() < 4096; ++a) {
    for (std::size_t b = a + 1; b < own_count && candidates.size() < 4096; ++b) {
      std::vector<std::size_t> both(models);
      for (std::size_t m = 0; m < models; ++m) both[m] = std::max(candidates[a][m], candidates[b][m]);
      if (total(both) <= in.gpu.capacity && seen.insert(both).second) candidates.push_back(both);
    }
  }
  auto covers = [&](const std::vector<std::size_t>& plan, std::size_t mix) {
    for (std::size_t m = 0; m < models; ++m) {
      if (!meets[m][plan[m]][levels_of[mix][m]]) return false;
    }
    return true;
  };
  std::vector<char> covered(out.mixes.size(), 0);
  std::vector<std::vector<std::size_t>> taken;
  std::size_t left = out.mixes.size();
  while (left > 0 && taken.size() < in.max_plans) {
    std::size_t best = candidates.size(), best_count = 0;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      std::size_t count = 0;
      for (std::size_t x = 0; x < out.mixes.size(); ++x) count += (!covered[x] && covers(candidates[c], x)) ? 1 : 0;
      const bool better = count > best_count ||
                          (count == best_count && count > 0 &&
                           (total(candidates[c]) < total(candidates[best]) ||
                            (total(candidates[c]) == total(candidates[best]) && candidates[c] < candidates[best])));
      if (better) best = c, best_count = count;
    }
    if (best == candidates.size()) break;
    for (std::size_t x = 0; x < out.mixes.size(); ++x) {
      if (!covered[x] && covers(candidates[best], x)) covered[x] = 1, --left;
    }
    taken.push_back(candidates[best]);
  }
  std::sort(taken.begin(), taken.end(), [&](const auto& a, const auto& b) {
    return total(a) != total(b) ? total(a) < total(b) : a < b;
  });
  for (const auto& plan : taken) {
    std::vector<unsigned> sms;
    for (std::size_t s : plan) sms.push_back(in.sizes[s]);
    out.plans.push_back(sms);
  }
  out.covered_by.assign(out.mixes.size(), -1);
  for (std::size_t x = 0; x < out.mixes.size(); ++x) {
    for (std::size_t p = 0; p < taken.size() && out.covered_by[x] < 0; ++p) {
      if (covers(taken[p], x)) out.covered_by[x] = static_cast<int>(p);
    }
    if (out.covered_by[x] < 0 && out.uncovered++ < 3) {
      out.problems.push_back("no plan of the " + std::to_string(taken.size()) + " taken covers " +
                             describe_mix(in, out.mixes[x]) + " (--plans " + std::to_string(in.max_plans) + ")");
    }
  }
  if (out.uncovered > 3) out.problems.push_back("... " + std::to_string(out.uncovered) + " such mixes in all");
  return out;
}

ex::Result<ex::PlanSet> make_plan_set(const SetInput& in, const SetSelection& sel, const ex::PlanGpu& gpu) {
  if (sel.plans.empty()) return invalid("no plan was selected: no mix of load can be met");
  ex::PlanSet set;
  set.gpu = gpu;
  set.gpu.device = -1;
  for (std::size_t p = 0; p < sel.plans.size(); ++p) {
    ex::SetPlan plan;
    plan.name = "plan-" + std::to_string(p + 1);
    for (std::size_t m = 0; m < in.models.size(); ++m) {
      const SetModel& model = in.models[m];
      const unsigned sms = sel.plans[p][m];
      const std::size_t s = static_cast<std::size_t>(
          std::find(in.sizes.begin(), in.sizes.end(), sms) - in.sizes.begin());
      if (s == in.sizes.size()) return invalid("plan " + plan.name + ": " + std::to_string(sms) + " SMs were not measured");
      plan.partitions.push_back({model.name, sms, model.p99_target_us, 0, 0, 0, model.program});
      plan.curves.push_back(ex::ModelCurve{model.name, model.curves[s]});
    }
    set.plans.push_back(std::move(plan));
  }
  TRTET_RETURN_IF_ERROR(ex::plan_set_json(set).status());
  return set;
}

std::string selection_report(const SetInput& in, const SetSelection& sel) {
  std::string text;
  for (std::size_t p = 0; p < sel.plans.size(); ++p) {
    std::size_t covers = 0;
    for (int by : sel.covered_by) covers += by == static_cast<int>(p) ? 1 : 0;
    text += "plan-" + std::to_string(p + 1) + " ";
    for (std::size_t m = 0; m < in.models.size(); ++m) {
      text += " " + in.models[m].name + " " + std::to_string(sel.plans[p][m]) + " SMs";
    }
    text += "  (first to cover " + std::to_string(covers) + " of " + std::to_string(sel.mixes.size()) + " mixes)\n";
  }
  for (const std::string& problem : sel.problems) text += "note: " + problem + "\n";
  return text;
}

}  // namespace trtet_plan
