// Plan sets: several partition plans of one GPU, made up front, for partitions that follow the load
// (docs/PLANNING.md, "Plan sets"). A green context's SMs are fixed when it is made, so a model that
// needs more SMs at some times moves to another plan's partition instead: every plan of the set is
// one driver split of its own (its partitions are disjoint; two plans' partitions overlap), and
// switch_to() picks the plan every model's next call runs on.
//
//   auto set = read_plan_set("ladder.json");                  // checked, every field and size
//   auto parts = apply_plan_set(*set, /*device=*/0);          // one split per plan, made now
//   auto chat = parts->stream("chat");                        // the current plan's stream for chat
//   { CudaStreamGuard guard(*chat); method->execute(); }
//   parts->switch_to("chat-48");                              // the next calls use that plan
//
// Nothing here throws; failures come back as Result / Error (Error.h).
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>
#include <torch_tensorrt/executorch/SloController.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// A model's measured latency on its partition of one plan: p99 (µs) against calls/s, rates rising.
struct ModelCurve {
  std::string model;                   ///< a model the plan names (a partition or the remainder)
  std::vector<slo::CurvePoint> points;  ///< 1 to kMaxCurvePoints, rates strictly increasing
};

/// One plan of a set: its name and what one split of the device makes.
struct SetPlan {
  std::string name;                       ///< 1 to 64 of [A-Za-z0-9_.-], unique in the set
  std::vector<PlanPartition> partitions;  ///< in split order; at least one
  std::string remainder_name;             ///< non-empty: one more partition of the SMs the others leave
  /// Optional: each model's measured curve on this plan (trtet-plan writes them), which the SLO
  /// controller predicts from (plan_set_ladder). At most one per model.
  std::vector<ModelCurve> curves;
};

/// Several plans of one GPU. Every plan names the same models: its partitions' names and its
/// remainder's name, in any order (a model may be a partition in one plan and the remainder in another).
struct PlanSet {
  PlanGpu gpu;                 ///< the GPU every plan was made on
  std::vector<SetPlan> plans;  ///< 1 to kMaxSetPlans; the first is current once applied

  /// The plan named `name`; nullptr where the set has none.
  const SetPlan* find(std::string_view name) const noexcept;
  /// Plan `index` as one device's plan (for any device), as PartitionPlan.h checks and applies one.
  DevicePlan device_plan(std::size_t index) const;
};

/// The format written and read: {"format": "trtet-plan-set", "version": 1, "gpu": {...},
/// "plans": [{"name": "...", "partitions": [...], "remainder": null,
///            "curves": {"<model>": [{"rate_per_s": 100, "p99_us": 80}, ...], ...}}, ...]}
/// ("curves" optional).
inline constexpr int kPlanSetVersion = 1;
/// The most points one model's curve holds in a plan set file.
inline constexpr std::size_t kMaxCurvePoints = 64;
/// The most plans a set holds (each is a driver split of its own, about 8 MiB of device memory).
inline constexpr std::size_t kMaxSetPlans = 16;

/// Parses and checks a plan set's text, as parse_partition_plan checks a plan (1 MiB, nesting 8, no
/// unknown or repeated keys, every number and name checked) and more: 1 to kMaxSetPlans plans (counted
/// before any is read), plan names valid and unique, each plan a valid plan of the set's GPU (its
/// total within one split: the partitions of one plan never overlap), every plan naming the same
/// models. kInvalidArgument naming the plan and the field.
Result<PlanSet> parse_plan_set(std::string_view json);
/// parse_plan_set of a file's contents (at most 1 MiB); errors start with the path.
Result<PlanSet> read_plan_set(const std::string& path);
/// The set as JSON text (what parse_plan_set reads back to an equal set), after the same checks.
Result<std::string> plan_set_json(const PlanSet& set);
/// Whether `set` can be made on `gpu` (no device needed): each plan as check_partition_plan checks
/// one (the same GPU kind; the plan's total within what one split hands out there). The SM counts to
/// split, one list per plan; kInvalidArgument naming the plan and both GPUs.
Result<std::vector<std::vector<unsigned>>> check_plan_set(const PlanSet& set, const PlanGpu& gpu);

/// The set as the SLO controller's ladder (SloController.h): each plan's models with their SMs (a
/// partition's, or for the remainder the GPU's SMs the partitions leave) and their curves.
/// kInvalidArgument naming the plan and model whose curve the set does not hold, or what
/// slo::Ladder::make refuses.
Result<slo::Ladder> plan_set_ladder(const PlanSet& set);

/// A plan set made on a device: every plan's split, each partition with its stream, and the current
/// plan. Made once (apply_plan_set); nothing is split afterwards.
///
/// Threads: stream(), current() and switch_to() may be called from any threads at once (the current
/// plan is one atomic index; the partitions and streams never change until destruction). A call that
/// read stream() before a switch runs on the old plan's partition; its model's next call runs on the
/// new one, ordered after it by the execute contract (a session's call waits for its previous call's
/// completion event, on any stream), so a switch needs no host wait and no device synchronization.
/// Two models' work shares SMs only while a call that started before the switch is still running.
///
/// Destruction (and move-assignment onto a set) requires that no thread still calls stream(),
/// current() or switch_to() on it and that no call will enqueue work on its streams any more. Work
/// already queued there is waited for: each stream is synchronized, then destroyed, then its green
/// context (GreenContext's rules), so nothing queued runs on a destroyed context.
class PlanSetPartitions {
 public:
  PlanSetPartitions() noexcept;  ///< empty: owns nothing
  ~PlanSetPartitions();
  PlanSetPartitions(PlanSetPartitions&& other) noexcept;
  PlanSetPartitions& operator=(PlanSetPartitions&& other) noexcept;
  PlanSetPartitions(const PlanSetPartitions&) = delete;
  PlanSetPartitions& operator=(const PlanSetPartitions&) = delete;

  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// The device split; -1 when empty.
  int device() const noexcept;
  /// The plans' names, in the set's order.
  const std::vector<std::string>& plans() const noexcept;
  /// The models, in the first plan's order (its partitions, then its remainder).
  const std::vector<std::string>& models() const noexcept;
  /// The current plan's name ("" when empty).
  const std::string& current() const noexcept;

  /// The current plan's stream for `model`: where the model's next call runs. kInvalidArgument
  /// naming the models there are; kInvalidState when empty.
  Result<cudaStream_t> stream(std::string_view model) const noexcept;
  /// Plan `plan`'s partition for `model` (whether current or not), owned by this object; for
  /// inspection (sm_count(), a probe on its stream). kInvalidArgument naming the plans or models there are.
  Result<const GreenContext*> partition(std::string_view plan, std::string_view model) const noexcept;

  /// Makes `plan` current: every model's next stream() is its partition of that plan. Switching to
  /// the current plan does nothing. kInvalidArgument naming the plans the set holds, and nothing
  /// changes, for a plan it does not hold; kInvalidState when empty.
  Status switch_to(std::string_view plan) noexcept;

 private:
  struct State;  // defined by the library
  friend struct PlanSetAccess;
  std::unique_ptr<State> state_;
};

/// Makes `set` on `device`: check_plan_set against the device first (the same errors), then one
/// split_device call per plan, in the set's order. The first plan is current. If a split fails, the
/// earlier ones are destroyed before the error returns: nothing is left split.
Result<PlanSetPartitions> apply_plan_set(const PlanSet& set, int device);

}  // namespace torch_tensorrt::executorch_backend
