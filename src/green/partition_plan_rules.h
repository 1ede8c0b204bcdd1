// The rules of the partition-plan format that need no device and no JSON (PartitionPlan.h): the
// limits on every value, the checks of a whole plan, and how errors and GPUs are described. Shared
// by the plan files' reading and writing (partition_plan.cpp, partition_plans.cpp) and nothing else.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstddef>
#include <string>
#include <vector>

#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend::green::plan_rules {

constexpr std::size_t kMaxPartitions = 256;
constexpr unsigned long long kMaxSms = 65536;
constexpr double kMaxMicroseconds = 1e12;
constexpr std::size_t kMaxGpuName = 256;
constexpr std::size_t kMaxProgram = 4096;

/// printf into a std::string (at most 1 KiB).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/// kInvalidArgument "partition plan: <message>", with the GPU's limits and a closest valid request where known.
Error invalid(std::string message, GreenContextLimits limits = {}, std::vector<unsigned> closest = {});
/// 1 to 64 of A-Z a-z 0-9 _ . -
bool valid_name(const std::string& name);
/// No C0 control character and no DEL.
bool printable(const std::string& text);
green::SmGranularity granularity_of(const PlanGpu& gpu);
GreenContextLimits limits_of(const PlanGpu& gpu, int device);
/// "'NVIDIA H200' (132 SMs; partitions are multiples of 8 SMs: minimum 8, alignment 8; one split hands out at most 120)"
std::string describe(const PlanGpu& gpu);
std::vector<unsigned> counts_of(const PartitionPlan& plan);
/// Every rule of the format that needs no device. Empty when the plan is valid.
std::string plan_problem(const PartitionPlan& plan);

}  // namespace torch_tensorrt::executorch_backend::green::plan_rules
