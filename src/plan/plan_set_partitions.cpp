// A plan set made on a device (torch_tensorrt/executorch/PlanSet.h): one split per plan, every
// partition's stream in one table, and the current plan as one atomic index, so that stream() and
// switch_to() from any threads at once need no lock.
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <utility>

#include "plan/json.h"
#include "plan/plan_set_rules.h"
#include "plan/rules.h"

namespace torch_tensorrt::executorch_backend {

struct PlanSetPartitions::State {
  int device = -1;
  std::vector<std::string> plans;
  std::vector<std::string> models;
  std::vector<std::vector<GreenContext>> splits;  // per plan, in split order (its remainder last)
  std::vector<cudaStream_t> streams;              // plan * models.size() + model
  std::vector<const GreenContext*> partitions;    // the same index
  std::atomic<std::size_t> current{0};

  ~State() {
    // Every stream of every plan first (a call on one plan's stream may wait on an event of
    // another's), then the streams and contexts (GreenContext's destructor, which waits again).
    for (const auto& split : splits) {
      for (const GreenContext& partition : split) {
        for (cudaStream_t stream : partition.streams()) {
          if (cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaGetLastError();  // ours: not left behind
        }
      }
    }
  }

  // The index of `name` in `names`, or names.size().
  static std::size_t index_of(const std::vector<std::string>& names, std::string_view name) noexcept {
    std::size_t i = 0;
    while (i < names.size() && names[i] != name) ++i;
    return i;
  }

  static std::string listed(const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& n : names) text += (text.empty() ? "'" : ", '") + n + "'";
    return text;
  }
};

struct PlanSetAccess {
  static Result<PlanSetPartitions> apply(const PlanSet& set, int device);
};

namespace {

const std::vector<std::string>& no_names() {
  static const std::vector<std::string> empty;
  return empty;
}

const std::string& no_name() {
  static const std::string empty;
  return empty;
}

Error empty_set(const char* call) {
  return Error(ErrorCode::kInvalidState, std::string(call) + " on an empty PlanSetPartitions");
}

}  // namespace

PlanSetPartitions::PlanSetPartitions() noexcept = default;
PlanSetPartitions::~PlanSetPartitions() = default;
PlanSetPartitions::PlanSetPartitions(PlanSetPartitions&& other) noexcept = default;
PlanSetPartitions& PlanSetPartitions::operator=(PlanSetPartitions&& other) noexcept = default;

int PlanSetPartitions::device() const noexcept { return state_ ? state_->device : -1; }
const std::vector<std::string>& PlanSetPartitions::plans() const noexcept { return state_ ? state_->plans : no_names(); }
const std::vector<std::string>& PlanSetPartitions::models() const noexcept {
  return state_ ? state_->models : no_names();
}

const std::string& PlanSetPartitions::current() const noexcept {
  return state_ ? state_->plans[state_->current.load(std::memory_order_acquire)] : no_name();
}

Result<cudaStream_t> PlanSetPartitions::stream(std::string_view model) const noexcept {
  if (!state_) return empty_set("stream");
  const std::size_t m = State::index_of(state_->models, model);
  if (m == state_->models.size()) {
    try {
      return Error(ErrorCode::kInvalidArgument, "plan set: no model named '" + std::string(model.substr(0, 64)) +
                                                    "'; it has " + State::listed(state_->models));
    } catch (...) {
      return Error(ErrorCode::kInternal, "out of memory naming the plan set's models");
    }
  }
  const std::size_t plan = state_->current.load(std::memory_order_acquire);
  return state_->streams[plan * state_->models.size() + m];
}

Result<const GreenContext*> PlanSetPartitions::partition(std::string_view plan, std::string_view model) const noexcept {
  if (!state_) return empty_set("partition");
  try {
    const std::size_t p = State::index_of(state_->plans, plan);
    if (p == state_->plans.size()) {
      return Error(ErrorCode::kInvalidArgument, "plan set: no plan named '" + std::string(plan.substr(0, 64)) +
                                                    "'; it holds " + State::listed(state_->plans));
    }
    const std::size_t m = State::index_of(state_->models, model);
    if (m == state_->models.size()) {
      return Error(ErrorCode::kInvalidArgument, "plan set: no model named '" + std::string(model.substr(0, 64)) +
                                                    "'; it has " + State::listed(state_->models));
    }
    return state_->partitions[p * state_->models.size() + m];
  } catch (...) {
    return Error(ErrorCode::kInternal, "out of memory naming the plan set's plans");
  }
}

Status PlanSetPartitions::switch_to(std::string_view plan) noexcept {
  if (!state_) return empty_set("switch_to");
  const std::size_t p = State::index_of(state_->plans, plan);
  if (p == state_->plans.size()) {
    try {
      return Error(ErrorCode::kInvalidArgument, "plan set: cannot switch to '" + std::string(plan.substr(0, 64)) +
                                                    "': the set holds no such plan; it holds " +
                                                    State::listed(state_->plans));
    } catch (...) {
      return Error(ErrorCode::kInternal, "out of memory naming the plan set's plans");
    }
  }
  state_->current.store(p, std::memory_order_release);
  return Status::Ok();
}

Result<PlanSetPartitions> apply_plan_set(const PlanSet& set, int device) { return PlanSetAccess::apply(set, device); }

Result<PlanSetPartitions> PlanSetAccess::apply(const PlanSet& set, int device) {
  const std::string problem = plan::set_problem(set);
  if (!problem.empty()) return plan::set_error(plan::invalid(problem));  // argument errors first, even without a GPU
  auto gpu = plan_gpu(device);
  if (!gpu.ok()) return gpu.error();
  auto counts = check_plan_set(set, *gpu);
  if (!counts.ok()) return counts.error();

  auto state = std::make_unique<PlanSetPartitions::State>();
  state->device = device;
  const SetPlan& first = set.plans[0];
  for (const PlanPartition& p : first.partitions) state->models.push_back(p.name);
  if (!first.remainder_name.empty()) state->models.push_back(first.remainder_name);
  const std::size_t models = state->models.size();
  state->streams.resize(set.plans.size() * models, nullptr);
  state->partitions.resize(set.plans.size() * models, nullptr);
  state->splits.reserve(set.plans.size());
  // One split per plan. A failure returns with `state`, which destroys the splits made before it.
  for (std::size_t i = 0; i < set.plans.size(); ++i) {
    const SetPlan& p = set.plans[i];
    const bool keep = !p.remainder_name.empty();
    auto split = split_device(device, (*counts)[i], keep ? Remainder::kKeep : Remainder::kDrop);
    if (!split.ok()) {
      return plan::set_error(plan::within(split.error(), plan::format("plan '%s' (split %zu of %zu)", p.name.c_str(),
                                                                      i + 1, set.plans.size())));
    }
    std::vector<std::string> names;
    for (const PlanPartition& part : p.partitions) names.push_back(part.name);
    if (keep) names.push_back(p.remainder_name);
    state->plans.push_back(p.name);
    state->splits.push_back(std::move(*split));
    const std::vector<GreenContext>& made = state->splits.back();
    for (std::size_t m = 0; m < models; ++m) {
      const std::size_t at = PlanSetPartitions::State::index_of(names, state->models[m]);
      if (at >= made.size()) {  // set_problem checked every plan names the same models
        return Error(ErrorCode::kInternal, "plan set: plan '" + p.name + "' has no partition for model '" +
                                               state->models[m] + "'");
      }
      state->partitions[i * models + m] = &made[at];
      state->streams[i * models + m] = made[at].stream();
    }
  }
  PlanSetPartitions made;
  made.state_ = std::move(state);
  return Result<PlanSetPartitions>(std::move(made));
}

}  // namespace torch_tensorrt::executorch_backend
