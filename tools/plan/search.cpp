#include "plan/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "plan/rules.h"

namespace trtet_plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using torch_tensorrt::executorch_backend::plan::format;

bool valid_size(const GpuShape& gpu, unsigned sms) {
  return gpu.unit > 0 && sms >= gpu.unit && sms % gpu.unit == 0 && sms <= gpu.capacity;
}

// A model's valid points, sorted by size (the first of equal sizes kept), with their ratios.
struct Scored {
  std::vector<CurvePoint> points;
  std::vector<double> ratios;
};

Scored score(const ModelNeeds& model, const GpuShape& gpu) {
  std::vector<CurvePoint> points;
  for (const CurvePoint& p : model.curve) {
    if (valid_size(gpu, p.sms)) points.push_back(p);
  }
  std::stable_sort(points.begin(), points.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.sms < b.sms; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const CurvePoint& a, const CurvePoint& b) { return a.sms == b.sms; }),
               points.end());
  Scored s;
  s.points = std::move(points);
  for (const CurvePoint& p : s.points) s.ratios.push_back(point_ratio(model, p));
  return s;
}

Choice choice_at(const ModelNeeds& model, const CurvePoint& p) {
  const double k = std::max(model.interference, 1.0);
  Choice c;
  c.sms = p.sms;
  c.p99_us = p.p99_us * k;
  c.calls_per_s = p.calls_per_s / k;
  c.ratio = point_ratio(model, p);
  c.meets = c.ratio <= 1.0;
  return c;
}

// need_i(r): index of the smallest point with ratio <= r, or nullopt.
std::optional<std::size_t> need(const Scored& s, double r) {
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (s.ratios[i] <= r) return i;
  }
  return std::nullopt;
}

// The sum of need_i(r), or nullopt where some model has none.
std::optional<unsigned long long> total_need(const std::vector<Scored>& scored, double r) {
  unsigned long long total = 0;
  for (const Scored& s : scored) {
    const auto i = need(s, r);
    if (!i) return std::nullopt;
    total += s.points[*i].sms;
  }
  return total;
}

void finish(SearchResult& result, const GpuShape& gpu) {
  result.total_sms = 0;
  result.worst_ratio = 0;
  bool all = !result.choices.empty();
  for (const Choice& c : result.choices) {
    result.total_sms += c.sms;
    result.worst_ratio = std::max(result.worst_ratio, c.ratio);
    all = all && c.meets;
  }
  result.headroom_sms = gpu.sm_count >= result.total_sms ? gpu.sm_count - result.total_sms : 0;
  result.feasible = all && result.total_sms <= gpu.capacity;
}

std::string describe_best(const ModelNeeds& model, const Choice& c) {
  std::string text = format("its best on at most the SMs left to it is %.1f us p99 on %u SMs", c.p99_us, c.sms);
  if (model.min_calls_per_s > 0) text += format(" at %.0f calls/s", c.calls_per_s);
  text += format(" (%.2fx its target%s)", c.ratio, model.min_calls_per_s > 0 ? "s" : "");
  return text;
}

std::string targets_of(const ModelNeeds& model) {
  std::string text = format("p99 <= %.1f us", model.p99_target_us);
  if (model.min_calls_per_s > 0) text += format(", >= %.0f calls/s", model.min_calls_per_s);
  return text;
}

// The checks that make any plan impossible. Empty when a search can run.
std::vector<std::string> preconditions(const std::vector<ModelNeeds>& models, const GpuShape& gpu) {
  std::vector<std::string> problems;
  if (models.empty()) problems.push_back("no models to plan");
  if (gpu.unit == 0 || gpu.capacity < gpu.unit || gpu.capacity > gpu.sm_count) {
    problems.push_back(format("the GPU cannot be split: %u SMs, granularity %u, at most %u SMs in one split",
                              gpu.sm_count, gpu.unit, gpu.capacity));
    return problems;
  }
  if (static_cast<unsigned long long>(models.size()) * gpu.unit > gpu.capacity) {
    problems.push_back(format("%zu models need at least %zu SMs (one %u-SM group each), more than one split hands "
                              "out (%u of the GPU's %u SMs)",
                              models.size(), models.size() * gpu.unit, gpu.unit, gpu.capacity, gpu.sm_count));
  }
  for (const ModelNeeds& m : models) {
    if (!(m.p99_target_us > 0) || !std::isfinite(m.p99_target_us)) {
      problems.push_back(format("model '%s': the p99 target must be a positive number of microseconds", m.name.c_str()));
    }
    if (m.min_calls_per_s < 0 || !std::isfinite(m.min_calls_per_s)) {
      problems.push_back(format("model '%s': the minimum calls/s must be 0 (none) or positive", m.name.c_str()));
    }
    if (score(m, gpu).points.empty()) {
      problems.push_back(format("model '%s' has no measured point at a size this GPU can split off (multiples of %u "
                                "up to %u SMs)",
                                m.name.c_str(), gpu.unit, gpu.capacity));
    }
  }
  return problems;
}

}  // namespace

std::vector<unsigned> valid_sizes(const GpuShape& gpu) {
  std::vector<unsigned> sizes;
  if (gpu.unit == 0) return sizes;
  for (unsigned s = gpu.unit; s <= gpu.capacity; s += gpu.unit) sizes.push_back(s);
  return sizes;
}

double point_ratio(const ModelNeeds& model, const CurvePoint& point) {
  const double k = std::max(model.interference, 1.0);
  double r = point.p99_us > 0 && model.p99_target_us > 0 ? point.p99_us * k / model.p99_target_us : kInf;
  if (!std::isfinite(r)) r = kInf;
  if (model.min_calls_per_s > 0) {
    const double rate = point.calls_per_s > 0 ? model.min_calls_per_s * k / point.calls_per_s : kInf;
    r = std::max(r, std::isfinite(rate) ? rate : kInf);
  }
  return r;
}

SearchResult search_plan(const std::vector<ModelNeeds>& models, const GpuShape& gpu, const SearchOptions& options) {
  SearchResult result;
  result.problems = preconditions(models, gpu);
  if (!result.problems.empty()) return result;

  std::vector<Scored> scored;
  scored.reserve(models.size());
  for (const ModelNeeds& m : models) scored.push_back(score(m, gpu));

  // The candidate bounds: every finite ratio of every curve, sorted. need() changes only there.
  std::vector<double> candidates;
  for (const Scored& s : scored) {
    for (double r : s.ratios) {
      if (std::isfinite(r)) candidates.push_back(r);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  auto fits = [&](double r) {
    const auto total = total_need(scored, r);
    return total && *total <= gpu.capacity;
  };
  // Bisection for the smallest candidate that fits (fits() is monotone in r).
  std::size_t lo = 0, hi = candidates.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (fits(candidates[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const bool any_fit = lo < candidates.size();
  const double best_r = any_fit ? candidates[lo] : kInf;
  const double r = (best_r <= 1.0 && !options.spread) ? 1.0 : best_r;

  if (any_fit) {
    for (std::size_t i = 0; i < models.size(); ++i) {
      const auto at = need(scored[i], r);
      result.choices.push_back(choice_at(models[i], scored[i].points[*at]));
    }
    finish(result, gpu);
  }
  if (result.feasible) return result;

  // No plan meets every target: say who cannot be met, and the best each can do.
  if (!any_fit) {
    result.problems.push_back("no plan of measured sizes fits one split (a curve has no usable point)");
    return result;
  }
  const unsigned others_min = static_cast<unsigned>(models.size() - 1) * gpu.unit;
  bool alone_reason = false;
  for (std::size_t i = 0; i < models.size(); ++i) {
    // The most this model can have: what one split gives, less one group for each other model.
    std::optional<Choice> best;
    for (const CurvePoint& p : scored[i].points) {
      if (p.sms + others_min > gpu.capacity) continue;
      const Choice c = choice_at(models[i], p);
      if (!best || c.ratio < best->ratio) best = c;
    }
    if (best && !best->meets) {
      alone_reason = true;
      result.problems.push_back(format("model '%s' cannot meet %s on any partition: %s", models[i].name.c_str(),
                                       targets_of(models[i]).c_str(), describe_best(models[i], *best).c_str()));
    }
  }
  if (!alone_reason) {
    // Each can be met alone, but not all together: name what each needs.
    const auto total = total_need(scored, 1.0);
    std::string needs;
    for (std::size_t i = 0; i < models.size(); ++i) {
      const auto at = need(scored[i], 1.0);
      if (!needs.empty()) needs += ", ";
      needs += format("'%s' %u", models[i].name.c_str(), at ? scored[i].points[*at].sms : 0u);
    }
    result.problems.push_back(format("every model can meet its targets alone, but together they need %llu SMs (%s), "
                                     "more than one split hands out (%u of the GPU's %u SMs)",
                                     total ? *total : 0ULL, needs.c_str(), gpu.capacity, gpu.sm_count));
  }
  std::string closest;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Choice& c = result.choices[i];
    if (!closest.empty()) closest += ", ";
    closest += format("'%s' %u SMs (%.1f us, %.2fx)", models[i].name.c_str(), c.sms, c.p99_us, c.ratio);
  }
  result.problems.push_back(format("the plan closest to every target misses by at most %.0f%%: %s",
                                   (result.worst_ratio - 1.0) * 100.0, closest.c_str()));
  return result;
}

SearchResult exhaustive_search(const std::vector<ModelNeeds>& models, const GpuShape& gpu,
                               unsigned long long max_combinations, bool* completed) {
  if (completed) *completed = true;
  SearchResult result;
  result.problems = preconditions(models, gpu);
  if (!result.problems.empty()) return result;
  std::vector<Scored> scored;
  for (const ModelNeeds& m : models) scored.push_back(score(m, gpu));

  std::vector<std::size_t> index(models.size(), 0);
  std::optional<std::vector<std::size_t>> best;
  bool best_feasible = false;
  unsigned long long best_total = 0;
  double best_worst = kInf;
  unsigned long long tried = 0;
  while (true) {
    if (max_combinations != 0 && tried++ >= max_combinations) {
      if (completed) *completed = false;
      break;
    }
    unsigned long long total = 0;
    double worst = 0;
    for (std::size_t i = 0; i < models.size(); ++i) {
      total += scored[i].points[index[i]].sms;
      worst = std::max(worst, scored[i].ratios[index[i]]);
    }
    if (total <= gpu.capacity && std::isfinite(worst)) {
      const bool feasible = worst <= 1.0;
      bool better = false;
      if (!best) {
        better = true;
      } else if (feasible != best_feasible) {
        better = feasible;
      } else if (feasible) {
        better = total < best_total || (total == best_total && worst < best_worst);
      } else {
        better = worst < best_worst || (worst == best_worst && total < best_total);
      }
      if (better) {
        best = index;
        best_feasible = feasible;
        best_total = total;
        best_worst = worst;
      }
    }
    // Next combination (odometer).
    std::size_t i = 0;
    while (i < models.size() && ++index[i] == scored[i].points.size()) index[i++] = 0;
    if (i == models.size()) break;
  }
  if (best) {
    for (std::size_t i = 0; i < models.size(); ++i) result.choices.push_back(choice_at(models[i], scored[i].points[(*best)[i]]));
    finish(result, gpu);
  }
  if (!result.feasible) result.problems.push_back("no combination of measured sizes meets every target");
  return result;
}

bool learn_interference(std::vector<ModelNeeds>& models, const std::vector<Choice>& plan,
                        const std::vector<double>& beside_p99_us, const std::vector<double>& beside_calls_per_s,
                        double margin) {
  bool changed = false;
  for (std::size_t i = 0; i < models.size() && i < plan.size() && i < beside_p99_us.size(); ++i) {
    ModelNeeds& m = models[i];
    const auto alone = std::find_if(m.curve.begin(), m.curve.end(),
                                    [&](const CurvePoint& p) { return p.sms == plan[i].sms; });
    if (alone == m.curve.end()) continue;
    const double rate = i < beside_calls_per_s.size() ? beside_calls_per_s[i] : 0;
    const bool p99_missed = beside_p99_us[i] > m.p99_target_us;
    const bool rate_missed = m.min_calls_per_s > 0 && rate < m.min_calls_per_s;
    if (!p99_missed && !rate_missed) continue;
    double k = m.interference;
    if (alone->p99_us > 0) k = std::max(k, beside_p99_us[i] / alone->p99_us * (1.0 + margin));
    if (rate_missed && rate > 0) k = std::max(k, alone->calls_per_s / rate * (1.0 + margin));
    if (rate_missed && rate <= 0) k = kInf;
    // Whatever the measurement says, the prediction at this size must now miss, so the next search
    // moves the model (a miss within the noise of the alone curve would otherwise stay put).
    if (p99_missed && alone->p99_us > 0) k = std::max(k, m.p99_target_us / alone->p99_us * (1.0 + margin));
    if (k > m.interference) {
      m.interference = k;
      changed = true;
    }
  }
  return changed;
}

}  // namespace trtet_plan
