// The rules of a plan set that need no device (PlanSet.h), shared by its file (plan_set.cpp) and by
// applying it (plan_set_partitions.cpp).
#pragma once

#include <torch_tensorrt/executorch/PlanSet.h>

#include <string>

namespace torch_tensorrt::executorch_backend::plan {

/// Every rule of a set that needs no device: 1 to kMaxSetPlans plans, names valid and unique, each
/// plan valid on the set's GPU, every plan naming the same models. Empty when the set is valid.
std::string set_problem(const PlanSet& set);
/// `e` with "plan set: " in place of the "partition plan: " the shared readers and checks start with.
Error set_error(const Error& e);

}  // namespace torch_tensorrt::executorch_backend::plan
