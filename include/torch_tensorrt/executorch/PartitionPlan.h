// Partition plans: which green-context partition of a GPU each model gets, as a JSON file that
// trtet-plan writes (docs/PLANNING.md), and the call that applies it.
//
//   auto plan = read_partition_plan("plan.json");              // checked, every field and size
//   if (!plan.ok()) puts(plan.error().message().c_str());
//   auto parts = apply_partition_plan(/*device=*/0, *plan);     // one split_device call
//   if (!parts.ok()) puts(parts.error().message().c_str());     // e.g. a GPU of another shape
//   auto chat = parts->get("chat");                             // that model's partition
//   if (!chat.ok()) puts(chat.error().message().c_str());       // names the partitions there are
//   { CudaStreamGuard guard((*chat)->stream()); method->execute(); }
//
// Nothing here throws; failures come back as Result / Error (Error.h), with kInvalidArgument for
// a malformed plan and for a plan this GPU cannot carry.
#pragma once

#include <torch_tensorrt/executorch/GreenContext.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// The GPU a plan was made on: its name and what green_context_limits() reported there.
struct PlanGpu {
  int device = -1;                   ///< the device plan_gpu() read; -1 in a plan (not in the file)
  std::string name;                  ///< cudaDeviceProp::name, e.g. "NVIDIA H200"
  unsigned sm_count = 0;
  unsigned min_partition = 0;
  unsigned alignment = 0;
  unsigned granularity = 0;          ///< min_partition rounded up to alignment
  unsigned max_partitioned_sms = 0;  ///< the most SMs one split handed out there
};

/// One model's partition, and what the planner measured for it (informational).
struct PlanPartition {
  std::string name;             ///< 1 to 64 of [A-Za-z0-9_.-], unique in the plan
  unsigned sms = 0;             ///< a multiple of gpu.granularity, at least one granule
  double p99_target_us = 0;     ///< > 0
  double min_calls_per_s = 0;   ///< 0: none
  double p99_alone_us = 0;      ///< measured alone on this partition (0: not measured)
  double p99_beside_us = 0;     ///< measured beside the plan's other models (0: not measured)
  std::string program;          ///< the program it was planned for (informational; at most 4096 bytes)
};

struct PartitionPlan {
  PlanGpu gpu;
  std::vector<PlanPartition> partitions;  ///< in split order; at least one
  /// Non-empty: one more partition, last, of every SM the others leave, handed out by this name
  /// (headroom for other work). Empty: the SMs left stay unused.
  std::string remainder_name;

  /// The SMs of the planned partitions (the remainder not counted).
  unsigned total_sms() const noexcept;
};

/// The format written and read: {"format": "trtet-partition-plan", "version": 1, ...}.
inline constexpr int kPartitionPlanVersion = 1;

/// Parses and checks a plan file's text. Untrusted input is fine: at most 1 MiB, nesting at most 8
/// deep, at most 256 partitions, no unknown or repeated keys, every number in range (SM counts and
/// granularity up to 65536, times finite and >= 0), names valid and unique, sizes multiples of the
/// plan's granularity, their total within its max_partitioned_sms, the GPU fields consistent.
/// kInvalidArgument naming the field and what is wrong.
Result<PartitionPlan> parse_partition_plan(std::string_view json);

/// parse_partition_plan of a file's contents; kInvalidArgument when it cannot be read or is larger than 1 MiB.
Result<PartitionPlan> read_partition_plan(const std::string& path);

/// The plan as JSON text (what parse_partition_plan reads back to an equal plan), after the same
/// checks; kInvalidArgument for a plan that would not parse back.
Result<std::string> partition_plan_json(const PartitionPlan& plan);

/// The GPU `device` as a plan records it (name and green_context_limits). kNoDevice without a GPU.
Result<PlanGpu> plan_gpu(int device);

/// Whether a plan made on `plan.gpu` can be applied on `gpu` (no device needed). The same SM count,
/// minimum partition, alignment and name are required (the curves were measured on that GPU), and
/// the plan's total must fit in what one split hands out on `gpu` (a GPU of the same kind may hand
/// out fewer: cuDevSmResourceSplitByCount keeps every group inside one GPC). Returns the SM counts
/// to split; kInvalidArgument naming both GPUs, with gpu's limits and, for a plan too large for
/// this split, the closest request it accepts (closest_valid()).
Result<std::vector<unsigned>> check_partition_plan(const PartitionPlan& plan, const PlanGpu& gpu);

/// A plan applied: each model's partition by name, then the remainder (if the plan names one).
/// Move-only (it owns the partitions); destroying it destroys them (GreenContext's rules).
class PlannedPartitions {
 public:
  PlannedPartitions() = default;
  PlannedPartitions(std::vector<std::string> names, std::vector<GreenContext> partitions)
      : names_(std::move(names)), partitions_(std::move(partitions)) {}

  /// The partition named `name` (a model's or the remainder's), owned by this object; or
  /// kInvalidArgument listing the names there are.
  Result<GreenContext*> get(std::string_view name) noexcept;
  /// Names, in split order (the remainder last).
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// The partitions, in the order of names() (read-only: get() gives one to make streams on).
  const std::vector<GreenContext>& partitions() const noexcept { return partitions_; }
  /// Takes the partitions out, in the order of names(), and leaves this empty (no names, no
  /// partitions), so the two never fall out of step.
  std::vector<GreenContext> release() && noexcept;

 private:
  std::vector<std::string> names_;
  std::vector<GreenContext> partitions_;
};

/// Splits `device` as `plan` says, in one split_device call: check_partition_plan against the
/// device first (the same errors), then split_device's own. Each partition comes with a stream.
Result<PlannedPartitions> apply_partition_plan(int device, const PartitionPlan& plan);

// ---- several GPUs: one file naming each device's plan (docs/PLANNING.md, "Several GPUs") ----
//
//   auto plans = read_partition_plans("plans.json");        // {"format": "trtet-partition-plans", ...}
//   auto parts = apply_partition_plans(*plans);              // every device checked, then split
//   auto chat = parts->get(/*device=*/1, "chat");            // that model's partition on GPU 1

/// One device's plan in a several-GPU file. `device` is -1 only for a one-device plan file read by
/// parse_partition_plans (it names no device: it is for whichever device applies it).
struct DevicePartitionPlan {
  int device = -1;
  PartitionPlan plan;
};

/// Each device's plan, in ascending device order, each device at most once.
struct PartitionPlans {
  std::vector<DevicePartitionPlan> devices;

  /// The plan for `device`; nullptr where the file has none (a one-device plan answers every device).
  const PartitionPlan* find(int device) const noexcept;
  /// Whether this came from a one-device plan file ("trtet-partition-plan"): one entry, device -1.
  bool one_device() const noexcept { return devices.size() == 1 && devices[0].device < 0; }
  /// The devices named, ascending (empty for a one-device plan).
  std::vector<int> device_indices() const;
};

/// The format written and read: {"format": "trtet-partition-plans", "version": 1, "devices":
/// [{"device": 0, "plan": {<a trtet-partition-plan>}}, ...]}.
inline constexpr int kPartitionPlansVersion = 1;
/// The most devices a several-GPU file names (device indices 0 to kMaxPlanDevices - 1).
inline constexpr int kMaxPlanDevices = 64;

/// Parses and checks a plan file for several GPUs, as thoroughly as parse_partition_plan (the same
/// limits on the whole file: 1 MiB, nesting 8, no unknown or repeated keys; 1 to kMaxPlanDevices
/// entries, device indices whole, in range and unique, each entry's plan checked as a one-device
/// plan is, errors naming devices[i] and the field). A one-device plan file ("trtet-partition-plan")
/// is read too, as one entry of device -1. kInvalidArgument naming the field and what is wrong.
Result<PartitionPlans> parse_partition_plans(std::string_view json);

/// parse_partition_plans of a file's contents (at most 1 MiB); errors start with the path.
Result<PartitionPlans> read_partition_plans(const std::string& path);

/// The several-GPU file's JSON text (what parse_partition_plans reads back to equal plans), after
/// the same checks; kInvalidArgument for plans that would not parse back (device -1 among them).
Result<std::string> partition_plans_json(const PartitionPlans& plans);

/// Merges one-device plan files into one several-GPU plan: `files` as (device, path), each path a
/// "trtet-partition-plan" file (what trtet-plan --device D writes). kInvalidArgument naming the
/// file or the device (a repeated device, an index out of range, a file that does not read).
Result<PartitionPlans> merge_partition_plans(const std::vector<std::pair<int, std::string>>& files);

/// Whether `plans` can be applied on a machine whose GPUs are `gpus` (gpus[d] as plan_gpu(d) reads
/// device d; gpus.size() is the device count). No device needed. Checks, in order: the plans
/// themselves, that the machine has every device they name (refused naming the devices the file
/// names and the machine's count), then each device's plan against that device
/// (check_partition_plan, the error naming the device). Returns each device's SM counts to split,
/// in the order of plans.devices.
Result<std::vector<std::vector<unsigned>>> check_partition_plans(const PartitionPlans& plans,
                                                                             const std::vector<PlanGpu>& gpus);

/// Several devices' plans applied: each device's PlannedPartitions. Move-only; destroying it
/// destroys every device's partitions.
class PlannedDevicePartitions {
 public:
  PlannedDevicePartitions() = default;
  PlannedDevicePartitions(std::vector<int> devices, std::vector<PlannedPartitions> planned)
      : devices_(std::move(devices)), planned_(std::move(planned)) {}

  /// Device `device`'s partitions; nullptr where the plans name no such device.
  PlannedPartitions* on(int device) noexcept;
  /// The partition named `name` on `device`, or kInvalidArgument naming the devices or the
  /// partitions there are.
  Result<GreenContext*> get(int device, std::string_view name) noexcept;
  /// The devices split, ascending.
  const std::vector<int>& devices() const noexcept { return devices_; }

 private:
  std::vector<int> devices_;
  std::vector<PlannedPartitions> planned_;
};

/// Splits every device `plans` names, each as its plan says (one split_device call per device), after
/// checking the whole machine first: the plans (argument errors even without a GPU), then the device
/// count (cudaGetDeviceCount only: with fewer GPUs than the plans name, nothing else of CUDA is
/// touched; kNoDevice on a machine with none, kInvalidArgument with some but too few, both naming
/// the count), then every named device's shape (check_partition_plans) — all before the first split.
/// A split that fails leaves no device split. A one-device plan (device -1) is refused: it names no
/// device (apply it with apply_partition_plan).
Result<PlannedDevicePartitions> apply_partition_plans(const PartitionPlans& plans);

}  // namespace torch_tensorrt::executorch_backend
