#include "green/partition_plan_rules.h"

#include <cstdarg>
#include <cstdio>
#include <set>
#include <utility>

namespace torch_tensorrt::executorch_backend::green::plan_rules {

std::string format(const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  return text;
}

Error invalid(std::string message, GreenContextLimits limits, std::vector<unsigned> closest) {
  return Error(ErrorCode::kInvalidArgument, "partition plan: " + message, limits,
                           std::move(closest));
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool printable(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

namespace {

unsigned unit_of(unsigned min_partition, unsigned alignment) {
  green::SmGranularity g;
  g.min_partition = min_partition;
  g.alignment = alignment;
  return g.unit();
}

}  // namespace

green::SmGranularity granularity_of(const PlanGpu& gpu) {
  green::SmGranularity g;
  g.sm_count = gpu.sm_count;
  g.min_partition = gpu.min_partition;
  g.alignment = gpu.alignment;
  g.max_groups = gpu.granularity != 0 ? gpu.max_partitioned_sms / gpu.granularity : 0;
  return g;
}

GreenContextLimits limits_of(const PlanGpu& gpu, int device) {
  GreenContextLimits limits;
  limits.device = device;
  limits.sm_count = gpu.sm_count;
  limits.min_partition = gpu.min_partition;
  limits.alignment = gpu.alignment;
  limits.granularity = gpu.granularity;
  limits.max_partitioned_sms = gpu.max_partitioned_sms;
  return limits;
}

std::string describe(const PlanGpu& gpu) {
  return format("'%s' (%u SMs; partitions are multiples of %u SMs: minimum %u, alignment %u; one split hands out at "
                "most %u)",
                gpu.name.c_str(), gpu.sm_count, gpu.granularity, gpu.min_partition, gpu.alignment,
                gpu.max_partitioned_sms);
}

std::vector<unsigned> counts_of(const PartitionPlan& plan) {
  std::vector<unsigned> counts;
  for (const PlanPartition& p : plan.partitions) counts.push_back(p.sms);
  return counts;
}

std::string plan_problem(const PartitionPlan& plan) {
  const PlanGpu& g = plan.gpu;
  if (g.name.empty() || g.name.size() > kMaxGpuName || !printable(g.name)) {
    return format("gpu.name must be 1 to %zu printable characters", kMaxGpuName);
  }
  const std::pair<const char*, unsigned> fields[] = {{"sm_count", g.sm_count},
                                                     {"min_partition", g.min_partition},
                                                     {"alignment", g.alignment},
                                                     {"granularity", g.granularity},
                                                     {"max_partitioned_sms", g.max_partitioned_sms}};
  for (const auto& [field, value] : fields) {
    if (value < 1 || value > kMaxSms) return format("gpu.%s is %u; it must be 1 to %llu", field, value, kMaxSms);
  }
  if (g.granularity != unit_of(g.min_partition, g.alignment)) {
    return format("gpu.granularity is %u, but a minimum partition of %u SMs aligned to %u makes %u", g.granularity,
                  g.min_partition, g.alignment, unit_of(g.min_partition, g.alignment));
  }
  if (g.max_partitioned_sms > g.sm_count || g.max_partitioned_sms % g.granularity != 0) {
    return format("gpu.max_partitioned_sms is %u; it must be a multiple of the granularity (%u) and at most the SM "
                  "count (%u)",
                  g.max_partitioned_sms, g.granularity, g.sm_count);
  }
  if (plan.partitions.empty() || plan.partitions.size() > kMaxPartitions) {
    return format("a plan has 1 to %zu partitions, this one %zu", kMaxPartitions, plan.partitions.size());
  }
  std::set<std::string> names;
  unsigned long long total = 0;
  for (std::size_t i = 0; i < plan.partitions.size(); ++i) {
    const PlanPartition& p = plan.partitions[i];
    if (!valid_name(p.name)) {
      return format("partitions[%zu].name must be 1 to 64 of A-Z a-z 0-9 _ . -", i);
    }
    if (!names.insert(p.name).second) return format("two partitions are named '%s'", p.name.c_str());
    if (p.sms < g.granularity || p.sms % g.granularity != 0 || p.sms > g.max_partitioned_sms) {
      return format("partition '%s' has %u SMs; sizes are multiples of %u from %u to %u", p.name.c_str(), p.sms,
                    g.granularity, g.granularity, g.max_partitioned_sms);
    }
    total += p.sms;
    if (!(p.p99_target_us > 0) || !(p.p99_target_us <= kMaxMicroseconds)) {
      return format("partition '%s': p99_target_us must be a number in (0, 1e12]", p.name.c_str());
    }
    const std::pair<const char*, double> measured[] = {
        {"min_calls_per_s", p.min_calls_per_s}, {"p99_alone_us", p.p99_alone_us}, {"p99_beside_us", p.p99_beside_us}};
    for (const auto& [field, value] : measured) {
      if (!(value >= 0) || !(value <= kMaxMicroseconds)) {
        return format("partition '%s': %s must be a number in [0, 1e12]", p.name.c_str(), field);
      }
    }
    if (p.program.size() > kMaxProgram || !printable(p.program)) {
      return format("partition '%s': program must be at most %zu printable characters", p.name.c_str(), kMaxProgram);
    }
  }
  if (total > g.max_partitioned_sms) {
    return format("the partitions ask for %llu SMs in all (%s), more than one split handed out on the GPU the plan "
                  "names (%u)",
                  total, green::format_counts(counts_of(plan)).c_str(), g.max_partitioned_sms);
  }
  if (!plan.remainder_name.empty()) {
    if (!valid_name(plan.remainder_name)) return "remainder must be null or 1 to 64 of A-Z a-z 0-9 _ . -";
    if (names.count(plan.remainder_name) != 0) {
      return format("the remainder is named '%s', like a partition", plan.remainder_name.c_str());
    }
    if (total >= g.sm_count) return "a remainder is named, but the partitions take every SM";
  }
  return "";
}

}  // namespace torch_tensorrt::executorch_backend::green::plan_rules
