#include "plan/rules.h"

#include <cstdarg>
#include <cstdio>
#include <set>
#include <utility>

namespace torch_tensorrt::executorch_backend::plan {

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

std::vector<unsigned> counts_of(const DevicePlan& plan) {
  std::vector<unsigned> counts;
  for (const PlanPartition& p : plan.partitions) counts.push_back(p.sms);
  return counts;
}

std::string device_plan_problem(const DevicePlan& plan) {
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

std::string plan_problem(const PartitionPlan& plan) {
  if (plan.devices.empty() || plan.devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return format("a plan names 1 to %d devices, this one %zu", kMaxPlanDevices, plan.devices.size());
  }
  if (plan.any_device()) return device_plan_problem(plan.devices[0]);
  int last = -1;
  for (std::size_t i = 0; i < plan.devices.size(); ++i) {
    const int device = plan.devices[i].device;
    if (device == kAnyDevice) {
      return format("devices[%zu] names no device; only a plan of one entry may be for any device", i);
    }
    if (device < 0 || device >= kMaxPlanDevices) {
      return format("devices[%zu].device is %d; it must be 0 to %d", i, device, kMaxPlanDevices - 1);
    }
    if (device <= last) {
      return device == last ? format("device %d has two plans", device)
                            : format("devices[%zu] is device %d after device %d: devices are listed in ascending order",
                                     i, device, last);
    }
    last = device;
    const std::string problem = device_plan_problem(plan.devices[i]);
    if (!problem.empty()) return format("devices[%zu] (device %d): %s", i, device, problem.c_str());
  }
  return "";
}

std::string device_list(const PartitionPlan& plan) {
  std::string text;
  for (const DevicePlan& d : plan.devices) text += (text.empty() ? "" : ", ") + std::to_string(d.device);
  return text;
}

Result<std::vector<unsigned>> check_on_gpu(const DevicePlan& planned, const PlanGpu& gpu) {
  const PlanGpu& made = planned.gpu;
  const GreenContextLimits here = limits_of(gpu, gpu.device);
  if (made.name != gpu.name || made.sm_count != gpu.sm_count || made.min_partition != gpu.min_partition ||
      made.alignment != gpu.alignment) {
    return invalid(format("it was made on %s, but this GPU is %s: the latencies it was planned on do not hold "
                          "here; make a plan on this GPU (trtet-plan)",
                          describe(made).c_str(), describe(gpu).c_str()),
                   here);
  }
  const std::vector<unsigned> counts = counts_of(planned);
  const unsigned total = planned.total_sms();
  if (total > gpu.max_partitioned_sms) {
    const green::SmGranularity g = granularity_of(gpu);
    return invalid(format("the partitions ask for %u SMs in all (%s); one split handed out %u on the GPU the plan was "
                          "made on, but only %u on this one (%s; the driver keeps each %u-SM group inside one GPC, so "
                          "GPUs of one kind can differ); closest valid request: %s",
                          total, green::format_counts(counts).c_str(), made.max_partitioned_sms,
                          gpu.max_partitioned_sms, describe(gpu).c_str(), gpu.granularity,
                          green::format_counts(green::closest_valid_counts(g, counts)).c_str()),
                   here, green::closest_valid_counts(g, counts));
  }
  if (!planned.remainder_name.empty() && total >= gpu.sm_count) {
    return invalid("a remainder is named, but the partitions take every SM of this GPU", here);
  }
  return counts;
}

}  // namespace torch_tensorrt::executorch_backend::plan
