#include "plan/planner.h"

#include <chrono>
#include <memory>

#include "run/stats.h"

namespace trtet_plan {
namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void print(std::FILE* log, const std::string& text) {
  if (log) {
    std::fputs(text.c_str(), log);
    std::fflush(log);
  }
}

unsigned long long combinations(const std::vector<ModelNeeds>& models, unsigned long long limit) {
  unsigned long long total = 1;
  for (const ModelNeeds& m : models) {
    const unsigned long long n = m.curve.empty() ? 1 : m.curve.size();
    if (total > limit / n + 1) return limit + 1;
    total *= n;
  }
  return total;
}

// The quality check: the exhaustive search of the same curves, and how far the plan is from it.
void compare_with_exhaustive(PlannerResult& r, unsigned long long limit, std::FILE* log) {
  char text[512];
  std::snprintf(text, sizeof(text), "search: %.1f us over %zu models' curves\n", r.search_us, r.models.size());
  print(log, text);
  if (limit == 0) return;
  const unsigned long long n = combinations(r.models, limit);
  if (n > limit) {
    std::snprintf(text, sizeof(text), "exhaustive check skipped: more than %llu combinations (--exhaustive-limit)\n",
                  limit);
    print(log, text);
    return;
  }
  const auto start = Clock::now();
  r.exhaustive = exhaustive_search(r.models, r.gpu);
  r.exhaustive_us = micros_since(start);
  r.exhaustive_ran = true;
  if (r.exhaustive.feasible && r.first.feasible) {
    const long long gap = static_cast<long long>(r.first.total_sms) - static_cast<long long>(r.exhaustive.total_sms);
    std::snprintf(text, sizeof(text),
                  "exhaustive search of the same curves (%llu combinations): %.1f us, best total %u SMs; this plan "
                  "%u SMs (%lld SMs = %.1f granules above it)\n",
                  n, r.exhaustive_us, r.exhaustive.total_sms, r.first.total_sms, gap,
                  static_cast<double>(gap) / r.gpu.unit);
  } else {
    std::snprintf(text, sizeof(text),
                  "exhaustive search of the same curves (%llu combinations): %.1f us, %s; worst ratio %.3f against "
                  "this plan's %.3f\n",
                  n, r.exhaustive_us, r.exhaustive.feasible ? "a plan meets every target" : "no plan meets every target",
                  r.exhaustive.worst_ratio, r.first.worst_ratio);
  }
  print(log, text);
}

void print_problems(const std::vector<std::string>& problems, std::FILE* log) {
  for (const std::string& p : problems) print(log, "  - " + p + "\n");
}

}  // namespace

ex::Result<std::vector<unsigned>> sizes_to_measure(const std::string& sizes, const GpuShape& gpu, std::FILE* log) {
  const std::vector<unsigned> allowed = valid_sizes(gpu);
  if (sizes.empty()) return allowed;
  TRTET_ASSIGN_OR_RETURN(const std::vector<unsigned> asked, trtet_run::parse_sm_range(sizes));
  std::vector<unsigned> kept;
  for (unsigned n : asked) {
    if (n >= gpu.unit && n % gpu.unit == 0 && n <= gpu.capacity) {
      kept.push_back(n);
    } else if (log) {
      std::fprintf(log, "note: --sizes %s: %u SMs is not a partition this GPU makes (multiples of %u up to %u); "
                        "skipped\n",
                   sizes.c_str(), n, gpu.unit, gpu.capacity);
    }
  }
  TRTET_CHECK_OR_RETURN(!kept.empty(), kInvalidArgument,
                        "--sizes %s: no size this GPU can split off (multiples of %u up to %u SMs)", sizes.c_str(),
                        gpu.unit, gpu.capacity);
  return kept;
}

namespace {

ex::Result<PlannerResult> plan(const PlanOptions& o, Measurer& measurer, std::FILE* log) {
  PlannerResult r;
  TRTET_ASSIGN_OR_RETURN(const torch_tensorrt::executorch_backend::PlanGpu gpu_read, measurer.gpu());
  const auto* gpu = &gpu_read;
  r.plan_gpu = *gpu;
  r.gpu = GpuShape{gpu->sm_count, gpu->granularity, gpu->max_partitioned_sms};
  char text[512];
  std::snprintf(text, sizeof(text),
                "GPU %d: %s, %u SMs; partitions are multiples of %u SMs (minimum %u, alignment %u); one split hands "
                "out at most %u SMs (the driver's own count: cuDevSmResourceSplitByCount)\n",
                o.device, gpu->name.c_str(), gpu->sm_count, gpu->granularity, gpu->min_partition, gpu->alignment,
                gpu->max_partitioned_sms);
  print(log, text);
  TRTET_ASSIGN_OR_RETURN(const std::vector<unsigned> sizes, sizes_to_measure(o.sizes, r.gpu, log));
  for (const ModelSpec& m : o.models) {
    std::snprintf(text, sizeof(text), "model '%s': %s, p99 <= %.1f us%s, %s I/O\n", m.name.c_str(),
                  m.program.c_str(), m.p99_target_us,
                  m.min_calls_per_s > 0 ? (", >= " + std::to_string(static_cast<long long>(m.min_calls_per_s)) +
                                           " calls/s").c_str()
                                        : "",
                  to_string(m.io));
    print(log, text);
  }
  std::snprintf(text, sizeof(text), "\n-- each model alone on %zu partition sizes, %d calls each after %d warm-up\n",
                sizes.size(), o.iterations, o.warmup);
  print(log, text);

  const auto curves_start = Clock::now();
  TRTET_ASSIGN_OR_RETURN(Curves curves, measurer.curves(sizes, log));
  r.curves_s = micros_since(curves_start) / 1e6;
  TRTET_CHECK_OR_RETURN(curves.points.size() == o.models.size(), kInternal, "%zu curves for %zu models",
                        curves.points.size(), o.models.size());
  for (std::size_t i = 0; i < o.models.size(); ++i) {
    ModelNeeds needs;
    needs.name = o.models[i].name;
    needs.p99_target_us = o.models[i].p99_target_us;
    needs.min_calls_per_s = o.models[i].min_calls_per_s;
    needs.curve = curves.points[i];
    r.models.push_back(std::move(needs));
  }
  r.p50_us = curves.p50_us;

  SearchOptions search_options;
  search_options.spread = o.spread;
  const auto start = Clock::now();
  r.first = search_plan(r.models, r.gpu, search_options);
  r.search_us = micros_since(start);
  r.last = r.first;
  print(log, "\n-- the search over the curves alone\n");
  if (!r.first.choices.empty()) print(log, search_table(r.models, r.first, r.gpu));
  compare_with_exhaustive(r, o.exhaustive_limit, log);
  if (!r.first.feasible) {
    r.problems = r.first.problems;
    print(log, "\nno plan meets every target:\n");
    print_problems(r.problems, log);
    r.exit_code = kPlanInfeasible;
    return r;
  }

  const std::string remainder = o.remainder == "none" ? std::string() : o.remainder;
  for (int round = 1; round <= o.rounds; ++round) {
    std::vector<unsigned> counts;
    for (const Choice& c : r.last.choices) counts.push_back(c.sms);
    const bool has_rest = r.last.total_sms < r.gpu.sm_count;
    const bool keep = has_rest && (!remainder.empty() || o.load_remainder);
    const bool load = keep && o.load_remainder;
    std::snprintf(text, sizeof(text), "\n-- round %d: all %zu models at once, each on its partition (%s)%s\n", round,
                  counts.size(), [&] {
                    std::string s;
                    for (std::size_t i = 0; i < counts.size(); ++i) {
                      s += (i ? ", " : "") + r.models[i].name + " " + std::to_string(counts[i]);
                    }
                    return s;
                  }().c_str(),
                  load ? ", a load flooding the remainder" : "");
    print(log, text);
    const auto beside_start = Clock::now();
    auto stats = measurer.side_by_side(counts, keep, load);
    r.beside_s += micros_since(beside_start) / 1e6;
    if (!stats.ok()) return stats.status();
    TRTET_CHECK_OR_RETURN(stats->size() == counts.size(), kInternal, "%zu results for %zu models", stats->size(),
                          counts.size());

    std::vector<VerifyRow> rows;
    std::vector<double> p99s, rates;
    bool all = true;
    for (std::size_t i = 0; i < r.models.size(); ++i) {
      const ModelNeeds& m = r.models[i];
      VerifyRow row;
      row.round = round;
      row.model = m.name;
      row.sms = counts[i];
      row.p99_target_us = m.p99_target_us;
      row.min_calls_per_s = m.min_calls_per_s;
      for (const CurvePoint& p : m.curve) {
        if (p.sms == counts[i]) row.p99_alone_us = p.p99_us;
      }
      row.p50_beside_us = (*stats)[i].p50_us;
      row.p99_beside_us = (*stats)[i].p99_us;
      row.calls_per_s_beside = (*stats)[i].calls_per_s;
      row.meets = meets_targets(row.p99_beside_us, row.calls_per_s_beside, m.p99_target_us, m.min_calls_per_s);
      all = all && row.meets;
      p99s.push_back(row.p99_beside_us);
      rates.push_back(row.calls_per_s_beside);
      rows.push_back(row);
      r.verify.push_back(row);
    }
    r.final_rows = rows;
    print(log, final_table(rows, r.gpu, keep ? remainder : std::string()));
    if (all) {
      r.met = true;
      break;
    }
    if (round == o.rounds) break;
    // Adjust: what each missing model saw beside the others becomes its interference; search again.
    learn_interference(r.models, r.last.choices, p99s, rates);
    const SearchResult next = search_plan(r.models, r.gpu, search_options);
    std::string missed;
    for (const VerifyRow& row : rows) {
      if (!row.meets) missed += (missed.empty() ? "'" : ", '") + row.model + "'";
    }
    print(log, "\n" + missed + " missed beside the others; the search again, with what was seen there:\n");
    if (!next.choices.empty()) print(log, search_table(r.models, next, r.gpu));
    if (!next.feasible) {
      r.problems = next.problems;
      r.problems.insert(r.problems.begin(), "beside the others no plan meets every target (the curves alone did)");
      break;
    }
    r.last = next;
  }

  if (!r.met) {
    if (r.problems.empty()) {
      for (const VerifyRow& row : r.final_rows) {
        if (row.meets) continue;
        std::snprintf(text, sizeof(text),
                      "model '%s' misses beside the others after %d round(s): p99 %.1f us against %.1f us on %u SMs "
                      "(%.1f us alone)",
                      row.model.c_str(), o.rounds, row.p99_beside_us, row.p99_target_us, row.sms, row.p99_alone_us);
        r.problems.push_back(text);
      }
    }
    print(log, "\nno plan meets every target beside the others:\n");
    print_problems(r.problems, log);
    r.exit_code = kPlanInfeasible;
    return r;
  }
  std::vector<std::string> programs;
  for (const ModelSpec& m : o.models) programs.push_back(m.program);
  const bool has_rest = r.last.total_sms < r.gpu.sm_count;
  r.plan = make_plan(r.final_rows, programs, r.plan_gpu, has_rest ? remainder : std::string());
  r.exit_code = kPlanOk;
  return r;
}

}  // namespace

ex::Result<PlannerResult> run_planner(const PlanOptions& o, Measurer& measurer, std::FILE* log) {
  const auto start = Clock::now();
  auto r = plan(o, measurer, log);
  if (!r.ok()) return r;
  r->total_s = micros_since(start) / 1e6;
  char text[256];
  std::snprintf(text, sizeof(text),
                "\nthe planner took %.1f s: %.1f s measuring each model alone, %.1f s side by side, %.1f us searching\n",
                r->total_s, r->curves_s, r->beside_s, r->search_us);
  print(log, text);
  return r;
}

}  // namespace trtet_plan
