// Partition plans (torch_tensorrt/executorch/PartitionPlan.h): reading and writing the file
// (plan/json.h does the JSON), merging any-device plans into one, checking a plan against GPUs
// without touching them, and applying it, one split_device call per device.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "plan/json.h"
#include "plan/rules.h"

namespace torch_tensorrt::executorch_backend {
namespace {

using namespace plan;  // the format's rules (plan/rules.h) and its JSON (plan/json.h)

std::string gpus_word(int count) { return count == 1 ? "GPU" : "GPUs"; }

}  // namespace

unsigned DevicePlan::total_sms() const noexcept {
  unsigned total = 0;
  for (const PlanPartition& p : partitions) total += p.sms;
  return total;
}

PartitionPlan PartitionPlan::of(DevicePlan plan) {
  PartitionPlan whole;
  whole.devices.push_back(std::move(plan));
  return whole;
}

const DevicePlan* PartitionPlan::find(int device) const noexcept {
  if (any_device()) return &devices[0];
  for (const DevicePlan& d : devices) {
    if (d.device == device) return &d;
  }
  return nullptr;
}

std::vector<int> PartitionPlan::device_indices() const {
  std::vector<int> indices;
  if (any_device()) return indices;
  for (const DevicePlan& d : devices) indices.push_back(d.device);
  return indices;
}

Result<PartitionPlan> parse_partition_plan(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    return plan_from_json(*root);
  } catch (const std::exception& e) {  // nothing above should throw; a plan is never a crash
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

Result<PartitionPlan> read_partition_plan(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return text.error();
  auto plan = parse_partition_plan(*text);
  if (!plan.ok()) return in_file(plan.error(), path);
  return plan;
}

Result<std::string> partition_plan_json(const PartitionPlan& plan) {
  TRTET_PLAN_TRY(plan_problem(plan));
  try {
    return plan_to_json(plan).dump(2) + "\n";
  } catch (const std::exception& e) {  // invalid UTF-8 in a string
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

Result<PartitionPlan> merge_partition_plans(const std::vector<std::pair<int, std::string>>& files) {
  try {
    if (files.empty() || files.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
      return invalid(format("merging takes 1 to %d plan files, one per device; got %zu", kMaxPlanDevices, files.size()));
    }
    PartitionPlan merged;
    for (const auto& [device, path] : files) {
      if (device < 0 || device >= kMaxPlanDevices) {
        return invalid(format("device %d (%s): a device index is 0 to %d", device, path.c_str(), kMaxPlanDevices - 1));
      }
      for (const DevicePlan& d : merged.devices) {
        if (d.device == device) return invalid(format("device %d is given two plans (%s and another)", device, path.c_str()));
      }
      auto read = read_partition_plan(path);
      if (!read.ok()) return read.error();
      if (!read->any_device()) {
        return invalid(format("%s names GPUs %s itself; merging takes plans for any device (trtet-plan --device %d ...)",
                              path.c_str(), device_list(*read).c_str(), device));
      }
      merged.devices.push_back(std::move(read->devices[0]));
      merged.devices.back().device = device;
    }
    std::sort(merged.devices.begin(), merged.devices.end(),
              [](const DevicePlan& a, const DevicePlan& b) { return a.device < b.device; });
    TRTET_PLAN_TRY(plan_problem(merged));
    return merged;
  } catch (const std::exception& e) {
    return invalid(std::string("merging: ") + e.what());
  }
}

Result<PlanGpu> plan_gpu(int device) {
  auto limits = green_context_limits(device);
  if (!limits.ok()) return limits.error();
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, device);
  if (error != cudaSuccess) {
    return Error(ErrorCode::kInternal, format("reading device %d's name: %s", device, cudaGetErrorString(error)));
  }
  PlanGpu gpu;
  gpu.device = device;
  gpu.name = prop.name;
  gpu.sm_count = limits->sm_count;
  gpu.min_partition = limits->min_partition;
  gpu.alignment = limits->alignment;
  gpu.granularity = limits->granularity;
  gpu.max_partitioned_sms = limits->max_partitioned_sms;
  return gpu;
}

Result<std::vector<std::vector<unsigned>>> check_partition_plan(const PartitionPlan& plan,
                                                                const std::vector<PlanGpu>& gpus) {
  TRTET_PLAN_TRY(plan_problem(plan));
  std::vector<std::vector<unsigned>> counts;
  for (const PlanGpu& gpu : gpus) {
    const DevicePlan* planned = plan.find(gpu.device);
    if (planned == nullptr) {
      return invalid(format("the plan has no entry for GPU %d (it splits %s %s)", gpu.device,
                            gpus_word(static_cast<int>(plan.devices.size())).c_str(), device_list(plan).c_str()),
                     limits_of(gpu, gpu.device));
    }
    auto checked = check_on_gpu(*planned, gpu);
    if (!checked.ok()) {
      if (plan.any_device()) return checked.error();
      return within(checked.error(), format("device %d", gpu.device));
    }
    counts.push_back(std::move(*checked));
  }
  return counts;
}

Result<GreenContext*> PlannedPartitions::get(int device, std::string_view name) noexcept {
  try {
    std::string known;
    for (std::size_t i = 0; i < names_.size() && i < partitions_.size() && i < devices_.size(); ++i) {
      if (devices_[i] != device) continue;
      if (names_[i] == name) return &partitions_[i];
      known += (known.empty() ? "'" : ", '") + names_[i] + "'";
    }
    if (known.empty()) {
      std::string split;
      for (int d : devices()) split += (split.empty() ? "" : ", ") + std::to_string(d);
      return Error(ErrorCode::kInvalidArgument,
                   format("the plan split no GPU %d; it split %s", device,
                          split.empty() ? "none" : ((devices().size() == 1 ? "GPU " : "GPUs ") + split).c_str()));
    }
    return Error(ErrorCode::kInvalidArgument, "no partition named '" + std::string(name.substr(0, 64)) +
                                                  "' in the plan on GPU " + std::to_string(device) + "; it has " + known);
  } catch (...) {
    return Error(ErrorCode::kInternal, "out of memory naming the plan's partitions");
  }
}

Result<GreenContext*> PlannedPartitions::get(std::string_view name) noexcept {
  try {
    const std::vector<int> split = devices();
    if (split.size() == 1) return get(split[0], name);
    std::string list;
    for (int d : split) list += (list.empty() ? "" : ", ") + std::to_string(d);
    return Error(ErrorCode::kInvalidArgument,
                 split.empty() ? std::string("no partition named '") + std::string(name.substr(0, 64)) +
                                     "' in the plan; it has none"
                               : "the plan split GPUs " + list + ": name the device too (get(device, name))");
  } catch (...) {
    return Error(ErrorCode::kInternal, "out of memory naming the plan's partitions");
  }
}

std::vector<int> PlannedPartitions::devices() const {
  std::vector<int> split;
  for (int d : devices_) {
    if (std::find(split.begin(), split.end(), d) == split.end()) split.push_back(d);
  }
  std::sort(split.begin(), split.end());
  return split;
}

std::vector<GreenContext> PlannedPartitions::release() && noexcept {
  std::vector<GreenContext> taken = std::move(partitions_);
  partitions_.clear();
  names_.clear();
  devices_.clear();
  return taken;
}

Result<PlannedPartitions> apply_partition_plan(const PartitionPlan& plan, int device) {
  TRTET_PLAN_TRY(plan_problem(plan));  // argument errors first, even without a GPU
  if (device == kAnyDevice && plan.any_device()) {
    return invalid("the plan is for any device and names none: give the device to apply it on");
  }
  if (device != kAnyDevice && (device < 0 || plan.find(device) == nullptr)) {
    return invalid(format("the plan has no entry for GPU %d (it splits %s %s)", device,
                          gpus_word(static_cast<int>(plan.devices.size())).c_str(), device_list(plan).c_str()));
  }
  const std::vector<int> targets = device != kAnyDevice ? std::vector<int>{device} : plan.device_indices();
  // The device count, and nothing else of CUDA, before it is known that every device exists.
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  const int highest = targets.back();
  if (highest >= count) {
    const std::string why = counted != cudaSuccess ? format(" (cudaGetDeviceCount: %s)", cudaGetErrorString(counted)) : "";
    std::string list;
    for (int d : targets) list += (list.empty() ? "" : ", ") + std::to_string(d);
    return Error(count == 0 ? ErrorCode::kNoDevice : ErrorCode::kInvalidArgument,
                 format("partition plan: the plan is %s %s %s (%d %s at least); this machine has %d %s%s",
                        device == kAnyDevice ? "for" : "applied on", gpus_word(static_cast<int>(targets.size())).c_str(),
                        list.c_str(), highest + 1, gpus_word(highest + 1).c_str(), count, gpus_word(count).c_str(),
                        why.c_str()));
  }
  // Every device's shape, before any split.
  std::vector<PlanGpu> gpus;
  for (int d : targets) {
    auto gpu = plan_gpu(d);
    if (!gpu.ok()) return within(gpu.error(), format("device %d", d));
    gpus.push_back(std::move(*gpu));
  }
  auto counts = check_partition_plan(plan, gpus);
  if (!counts.ok()) return counts.error();
  std::vector<int> devices;
  std::vector<std::string> names;
  std::vector<GreenContext> partitions;  // the earlier devices' splits go with it when a later one fails
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const DevicePlan& d = *plan.find(targets[i]);
    const bool keep = !d.remainder_name.empty();
    auto split = split_device(targets[i], (*counts)[i], keep ? Remainder::kKeep : Remainder::kDrop);
    if (!split.ok()) return targets.size() == 1 ? split.error() : within(split.error(), format("device %d", targets[i]));
    for (const PlanPartition& p : d.partitions) names.push_back(p.name);
    if (keep) names.push_back(d.remainder_name);
    for (GreenContext& p : *split) partitions.push_back(std::move(p));
    devices.resize(partitions.size(), targets[i]);
  }
  return PlannedPartitions(std::move(devices), std::move(names), std::move(partitions));
}

}  // namespace torch_tensorrt::executorch_backend
