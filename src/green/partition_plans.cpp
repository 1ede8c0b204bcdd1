// The several-GPU plan file (torch_tensorrt/executorch/PartitionPlan.h, "several GPUs"): one
// "trtet-partition-plans" file naming each device's plan; merging one-device files into it,
// checking it against a machine without touching a GPU, and applying it one split per device.
// Each device's plan is read and checked as the one-device file is (partition_plan.cpp).
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "green/partition_plan_rules.h"
#include "green/plan_json.h"

namespace torch_tensorrt::executorch_backend {
namespace {

using namespace green::plan_rules;  // the format's rules (partition_plan_rules.h)
using namespace green::plan_json;   // the JSON reading both files share (plan_json.h)

// Every rule of the several-GPU format that needs no device. Empty when the plans are valid.
std::string plans_problem(const PartitionPlans& plans) {
  if (plans.devices.empty() || plans.devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return format("a several-GPU plan names 1 to %d devices, this one %zu", kMaxPlanDevices, plans.devices.size());
  }
  if (plans.one_device()) return "";
  int last = -1;
  for (std::size_t i = 0; i < plans.devices.size(); ++i) {
    const int device = plans.devices[i].device;
    if (device < 0 || device >= kMaxPlanDevices) {
      return format("devices[%zu].device is %d; it must be 0 to %d", i, device, kMaxPlanDevices - 1);
    }
    if (device <= last) {
      return device == last ? format("device %d has two plans", device)
                            : format("devices[%zu] is device %d after device %d: devices are listed in ascending order",
                                     i, device, last);
    }
    last = device;
    const std::string problem = plan_problem(plans.devices[i].plan);
    if (!problem.empty()) return format("devices[%zu] (device %d): %s", i, device, problem.c_str());
  }
  return "";
}

std::string device_list(const PartitionPlans& plans) {
  std::string text;
  for (const DevicePartitionPlan& d : plans.devices) text += (text.empty() ? "" : ", ") + std::to_string(d.device);
  return text;
}

Result<PartitionPlans> plans_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the file", {"format", "version", "devices"}, {}));
  unsigned version = 0;
  TRTET_PLAN_TRY(Reader::count(root["version"], "version", version));
  if (version != kPartitionPlansVersion) {
    return invalid(format("version %u of %s; this library reads version %d", version, kPlansFormat,
                          kPartitionPlansVersion));
  }
  const json& devices = root["devices"];
  if (!devices.is_array()) return invalid("\"devices\" must be an array");
  if (devices.empty() || devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return invalid(format("a several-GPU plan names 1 to %d devices, this one %zu", kMaxPlanDevices, devices.size()));
  }
  PartitionPlans plans;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& entry = devices[i];
    const std::string where = format("devices[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"device", "plan"}, {}));
    unsigned device = 0;
    TRTET_PLAN_TRY(Reader::count(entry["device"], where + ".device", device));
    if (device >= static_cast<unsigned>(kMaxPlanDevices)) {
      return invalid(format("%s.device is %u; it must be 0 to %d", where.c_str(), device, kMaxPlanDevices - 1));
    }
    auto plan = plan_from_json(entry["plan"]);
    if (!plan.ok()) return within(plan.error(), format("%s (device %u).plan", where.c_str(), device));
    plans.devices.push_back({static_cast<int>(device), std::move(*plan)});
  }
  TRTET_PLAN_TRY(plans_problem(plans));
  return plans;
}

}  // namespace

// ---- several GPUs ----

const PartitionPlan* PartitionPlans::find(int device) const noexcept {
  if (one_device()) return &devices[0].plan;
  for (const DevicePartitionPlan& d : devices) {
    if (d.device == device) return &d.plan;
  }
  return nullptr;
}

std::vector<int> PartitionPlans::device_indices() const {
  std::vector<int> indices;
  if (one_device()) return indices;
  for (const DevicePartitionPlan& d : devices) indices.push_back(d.device);
  return indices;
}

Result<PartitionPlans> parse_partition_plans(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    const json& r = *root;
    if (!r.is_object()) return invalid("the file must be an object");
    auto format_it = r.find("format");
    if (format_it == r.end()) return invalid("the file has no \"format\"");
    if (format_it->is_string() && format_it->get_ref<const std::string&>() == kFormat) {
      auto plan = plan_from_json(r);  // a one-device plan: for whichever device applies it
      if (!plan.ok()) return plan.error();
      PartitionPlans plans;
      plans.devices.push_back({-1, std::move(*plan)});
      return plans;
    }
    if (!format_it->is_string() || format_it->get_ref<const std::string&>() != kPlansFormat) {
      return invalid(format("\"format\" must be \"%s\" (several GPUs) or \"%s\" (one)", kPlansFormat, kFormat));
    }
    return plans_from_json(r);
  } catch (const std::exception& e) {  // nothing above should throw
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

Result<PartitionPlans> read_partition_plans(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return text.error();
  auto plans = parse_partition_plans(*text);
  if (!plans.ok()) {
    return Error(plans.error().code(), path + ": " + plans.error().message(), plans.error().limits(),
                             plans.error().closest_valid());
  }
  return plans;
}

Result<std::string> partition_plans_json(const PartitionPlans& plans) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: write it with partition_plan_json, or give it a device");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);
  try {
    json root;
    root["format"] = kPlansFormat;
    root["version"] = kPartitionPlansVersion;
    json devices = json::array();
    for (const DevicePartitionPlan& d : plans.devices) devices.push_back({{"device", d.device}, {"plan", plan_to_json(d.plan)}});
    root["devices"] = std::move(devices);
    return root.dump(2) + "\n";
  } catch (const std::exception& e) {
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

Result<PartitionPlans> merge_partition_plans(const std::vector<std::pair<int, std::string>>& files) {
  try {
    if (files.empty() || files.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
      return invalid(format("merging takes 1 to %d plan files, one per device; got %zu", kMaxPlanDevices, files.size()));
    }
    PartitionPlans plans;
    for (const auto& [device, path] : files) {
      if (device < 0 || device >= kMaxPlanDevices) {
        return invalid(format("device %d (%s): a device index is 0 to %d", device, path.c_str(), kMaxPlanDevices - 1));
      }
      for (const DevicePartitionPlan& d : plans.devices) {
        if (d.device == device) return invalid(format("device %d is given two plans (%s and another)", device, path.c_str()));
      }
      auto plans_read = read_partition_plans(path);
      if (!plans_read.ok()) return plans_read.error();
      if (!plans_read->one_device()) {
        return invalid(format("%s is a several-GPU plan; merging takes one-device plans (trtet-plan --device %d ...)",
                              path.c_str(), device));
      }
      plans.devices.push_back({device, std::move(plans_read->devices[0].plan)});
    }
    std::sort(plans.devices.begin(), plans.devices.end(),
              [](const DevicePartitionPlan& a, const DevicePartitionPlan& b) { return a.device < b.device; });
    const std::string problem = plans_problem(plans);
    if (!problem.empty()) return invalid(problem);
    return plans;
  } catch (const std::exception& e) {
    return invalid(std::string("merging: ") + e.what());
  }
}

Result<std::vector<std::vector<unsigned>>> check_partition_plans(const PartitionPlans& plans,
                                                                             const std::vector<PlanGpu>& gpus) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: check it with check_partition_plan against the GPU it is for");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);
  const int count = static_cast<int>(gpus.size());
  const int highest = plans.devices.back().device;
  if (highest >= count) {
    return invalid(format("the plans are for GPUs %s (%d GPU%s at least); this machine has %d GPU%s", device_list(plans).c_str(),
                          highest + 1, highest == 0 ? "" : "s", count, count == 1 ? "" : "s"));
  }
  std::vector<std::vector<unsigned>> counts;
  for (const DevicePartitionPlan& d : plans.devices) {
    PlanGpu gpu = gpus[static_cast<std::size_t>(d.device)];
    gpu.device = d.device;
    auto checked = check_partition_plan(d.plan, gpu);
    if (!checked.ok()) {
      Error e = within(checked.error(), format("device %d", d.device));
      return Error(e.code(), e.message(), limits_of(gpu, d.device), e.closest_valid());
    }
    counts.push_back(std::move(*checked));
  }
  return counts;
}

PlannedPartitions* PlannedDevicePartitions::on(int device) noexcept {
  for (std::size_t i = 0; i < devices_.size() && i < planned_.size(); ++i) {
    if (devices_[i] == device) return &planned_[i];
  }
  return nullptr;
}

Result<GreenContext*> PlannedDevicePartitions::get(int device, std::string_view name) noexcept {
  try {
    PlannedPartitions* planned = on(device);
    if (planned == nullptr) {
      std::string known;
      for (int d : devices_) known += (known.empty() ? "" : ", ") + std::to_string(d);
      return Error(ErrorCode::kInvalidArgument,
                               format("the plans split no GPU %d; they split GPU%s %s", device,
                                      devices_.size() == 1 ? "" : "s", known.empty() ? "none" : known.c_str()));
    }
    auto found = planned->get(name);
    if (!found.ok()) {
      return Error(found.error().code(), format("GPU %d: %s", device, found.error().message().c_str()));
    }
    return *found;
  } catch (...) {
    return Error(ErrorCode::kInternal, "out of memory naming the plans' partitions");
  }
}

Result<PlannedDevicePartitions> apply_partition_plans(const PartitionPlans& plans) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: apply it with apply_partition_plan(device, plan)");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);  // argument errors first, even without a GPU
  // The device count, and nothing else of CUDA, before it is known that every device exists.
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  const int highest = plans.devices.back().device;
  if (highest >= count) {
    const std::string why = counted != cudaSuccess ? format(" (cudaGetDeviceCount: %s)", cudaGetErrorString(counted)) : "";
    return Error(count == 0 ? ErrorCode::kNoDevice : ErrorCode::kInvalidArgument,
                             format("partition plan: the plans are for GPUs %s (%d GPU%s at least); this machine has %d "
                                    "GPU%s%s",
                                    device_list(plans).c_str(), highest + 1, highest == 0 ? "" : "s", count,
                                    count == 1 ? "" : "s", why.c_str()));
  }
  // Every named device's shape, before any split.
  std::vector<PlanGpu> gpus(static_cast<std::size_t>(count));  // devices the plans do not name stay unread
  for (const DevicePartitionPlan& d : plans.devices) {
    auto gpu = plan_gpu(d.device);
    if (!gpu.ok()) return within(gpu.error(), format("device %d", d.device));
    gpus[static_cast<std::size_t>(d.device)] = std::move(*gpu);
  }
  auto counts = check_partition_plans(plans, gpus);
  if (!counts.ok()) return counts.error();
  std::vector<int> devices;
  std::vector<PlannedPartitions> planned;
  for (std::size_t i = 0; i < plans.devices.size(); ++i) {
    const DevicePartitionPlan& d = plans.devices[i];
    const bool keep = !d.plan.remainder_name.empty();
    auto split = split_device(d.device, (*counts)[i], keep ? Remainder::kKeep : Remainder::kDrop);
    if (!split.ok()) return within(split.error(), format("device %d", d.device));  // the earlier splits go with `planned`
    std::vector<std::string> names;
    for (const PlanPartition& p : d.plan.partitions) names.push_back(p.name);
    if (keep) names.push_back(d.plan.remainder_name);
    devices.push_back(d.device);
    planned.emplace_back(std::move(names), std::move(*split));
  }
  return PlannedDevicePartitions(std::move(devices), std::move(planned));
}

}  // namespace torch_tensorrt::executorch_backend
