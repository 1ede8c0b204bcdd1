// Partition plans: which green-context partition of each GPU each model gets, as a JSON file that
// trtet-plan writes (docs/PLANNING.md), and the call that applies it. One plan holds one entry per
// device it splits (DevicePlan), or one entry for whichever device applies it.
//
//   auto plan = read_partition_plan("plan.json");              // checked, every field and size
//   if (!plan.ok()) puts(plan.error().message().c_str());
//   auto parts = apply_partition_plan(*plan, /*device=*/0);     // one split_device call
//   if (!parts.ok()) puts(parts.error().message().c_str());     // e.g. a GPU of another shape
//   auto chat = parts->get(0, "chat");                           // that model's partition on GPU 0
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
  std::string name;             ///< 1 to 64 of [A-Za-z0-9_.-], unique in the device's plan
  unsigned sms = 0;             ///< a multiple of gpu.granularity, at least one granule
  double p99_target_us = 0;     ///< > 0
  double min_calls_per_s = 0;   ///< 0: none
  double p99_alone_us = 0;      ///< measured alone on this partition (0: not measured)
  double p99_beside_us = 0;     ///< measured beside the plan's other models (0: not measured)
  std::string program;          ///< the program it was planned for (informational; at most 4096 bytes)
};

/// A device index meaning "whichever device applies the plan" (a DevicePlan that names no device).
inline constexpr int kAnyDevice = -1;

/// One device's part of a plan: what one driver split of that device makes.
struct DevicePlan {
  int device = kAnyDevice;  ///< 0 to kMaxPlanDevices - 1, or kAnyDevice (then the plan's only entry)
  PlanGpu gpu;
  std::vector<PlanPartition> partitions;  ///< in split order; at least one
  /// Non-empty: one more partition, last, of every SM the others leave, handed out by this name
  /// (headroom for other work). Empty: the SMs left stay unused.
  std::string remainder_name;

  /// The SMs of the planned partitions (the remainder not counted).
  unsigned total_sms() const noexcept;
};

/// A partition plan: one DevicePlan per device it splits, in ascending device order, each device at
/// most once; or a single DevicePlan of kAnyDevice, for whichever device applies it.
struct PartitionPlan {
  std::vector<DevicePlan> devices;

  /// A plan of one entry: `plan` (its device kept: kAnyDevice for any device).
  static PartitionPlan of(DevicePlan plan);
  /// The entry for `device`; nullptr where the plan has none (an any-device plan answers every device).
  const DevicePlan* find(int device) const noexcept;
  /// Whether the plan is for any device: one entry, of kAnyDevice.
  bool any_device() const noexcept { return devices.size() == 1 && devices[0].device == kAnyDevice; }
  /// The devices named, ascending (empty for an any-device plan).
  std::vector<int> device_indices() const;
};

/// The format written: {"format": "trtet-partition-plan", "version": 2, "devices": [{"device": 0,
/// "gpu": {...}, "partitions": [...], "remainder": null}, ...]} ("device" left out: any device).
/// Also read: version 1 of "trtet-partition-plan" (one device, any device) and of
/// "trtet-partition-plans" (several devices, {"devices": [{"device": D, "plan": {<version 1>}}]}).
inline constexpr int kPartitionPlanVersion = 2;
/// The most devices a plan names (device indices 0 to kMaxPlanDevices - 1).
inline constexpr int kMaxPlanDevices = 64;

/// Parses and checks a plan file's text, in any of the formats above. Untrusted input is fine: at
/// most 1 MiB, nesting at most 8 deep, no unknown or repeated keys, 1 to kMaxPlanDevices entries
/// with device indices whole, in range, ascending and unique, at most 256 partitions an entry,
/// every number in range (SM counts and granularity up to 65536, times finite and >= 0), names
/// valid and unique, sizes multiples of the entry's granularity, their total within its
/// max_partitioned_sms, the GPU fields consistent. kInvalidArgument naming the field (devices[i],
/// with the device) and what is wrong.
Result<PartitionPlan> parse_partition_plan(std::string_view json);

/// parse_partition_plan of a file's contents (at most 1 MiB); errors start with the path.
Result<PartitionPlan> read_partition_plan(const std::string& path);

/// The plan as JSON text in the current format (what parse_partition_plan reads back to an equal
/// plan), after the same checks; kInvalidArgument for a plan that would not parse back.
Result<std::string> partition_plan_json(const PartitionPlan& plan);

/// Merges any-device plan files into one plan: `files` as (device, path), each path a plan for any
/// device (what trtet-plan --device D writes). kInvalidArgument naming the file or the device (a
/// repeated device, an index out of range, a file that does not read or names devices itself).
Result<PartitionPlan> merge_partition_plans(const std::vector<std::pair<int, std::string>>& files);

/// The GPU `device` as a plan records it (name and green_context_limits). kNoDevice without a GPU.
Result<PlanGpu> plan_gpu(int device);

/// Whether `plan` can be applied on the GPUs `gpus` (each as plan_gpu read it, its device set), no
/// device needed: each GPU against the plan's entry for its device (refused where the plan has
/// none). The same SM count, minimum partition, alignment and name are required (the curves were
/// measured on that GPU), and the entry's total must fit in what one split hands out on that GPU
/// (a GPU of the same kind may hand out fewer: cuDevSmResourceSplitByCount keeps every group inside
/// one GPC). Returns the SM counts to split, one list per GPU in the order of `gpus`;
/// kInvalidArgument naming the device and both GPUs, with the GPU's limits and, for an entry too
/// large for this split, the closest request it accepts (closest_valid()).
Result<std::vector<std::vector<unsigned>>> check_partition_plan(const PartitionPlan& plan,
                                                                const std::vector<PlanGpu>& gpus);

/// A plan applied: each device's partitions by name (a device's models in split order, then its
/// remainder if the plan names one), devices ascending. Move-only (it owns the partitions);
/// destroying it destroys them (GreenContext's rules).
class PlannedPartitions {
 public:
  PlannedPartitions() = default;
  /// Partition i is partitions[i], named names[i], on device devices[i] (three lists in step).
  PlannedPartitions(std::vector<int> devices, std::vector<std::string> names, std::vector<GreenContext> partitions)
      : devices_(std::move(devices)), names_(std::move(names)), partitions_(std::move(partitions)) {}

  /// The partition named `name` on `device`, owned by this object; or kInvalidArgument naming the
  /// devices split or the partitions there are.
  Result<GreenContext*> get(int device, std::string_view name) noexcept;
  /// The partition named `name` where one device was split; kInvalidArgument otherwise (naming the
  /// devices: ask get(device, name)) or where there is no such partition.
  Result<GreenContext*> get(std::string_view name) noexcept;
  /// The devices split, ascending.
  std::vector<int> devices() const;
  /// Names, in split order (device by device, each device's remainder last).
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// The partitions, in the order of names() (read-only: get() gives one to make streams on).
  const std::vector<GreenContext>& partitions() const noexcept { return partitions_; }
  /// Takes the partitions out, in the order of names(), and leaves this empty (no names, no
  /// partitions), so the two never fall out of step.
  std::vector<GreenContext> release() && noexcept;

 private:
  std::vector<int> devices_;  // per partition
  std::vector<std::string> names_;
  std::vector<GreenContext> partitions_;
};

/// Splits GPUs as `plan` says, one split_device call per device. `device` kAnyDevice: every device
/// the plan names (an any-device plan is refused: it names none; give the device). `device` >= 0:
/// that device alone, with the plan's entry for it (an any-device plan's, or the entry naming it).
/// The whole machine is checked before the first split: the plan (argument errors even without a
/// GPU), then the device count (cudaGetDeviceCount only: with fewer GPUs than the plan names,
/// nothing else of CUDA is touched; kNoDevice on a machine with none, kInvalidArgument with some but
/// too few, both naming the count), then every device's shape (check_partition_plan). A split that
/// fails leaves no device split. Each partition comes with a stream.
Result<PlannedPartitions> apply_partition_plan(const PartitionPlan& plan, int device = kAnyDevice);

}  // namespace torch_tensorrt::executorch_backend
