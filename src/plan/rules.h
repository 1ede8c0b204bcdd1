// The rules of the plan formats that need no device and no JSON (PartitionPlan.h, PlanSet.h): the
// limits on every value, the checks of one device's plan and of a whole plan, and how errors and
// GPUs are described. Shared by the plan layer's reading, writing and applying, and by trtet-plan.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstddef>
#include <string>
#include <vector>

#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend::plan {

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
std::vector<unsigned> counts_of(const DevicePlan& plan);
/// Every rule of one device's plan that needs no device (its device index aside). Empty when valid.
std::string device_plan_problem(const DevicePlan& plan);
/// Every rule of a whole plan that needs no device: 1 to kMaxPlanDevices entries, an any-device
/// entry alone, device indices in range and ascending, each entry valid. Empty when valid.
std::string plan_problem(const PartitionPlan& plan);
/// One device's plan (checked by device_plan_problem) against the GPU it is applied on: the SM
/// counts to split, or kInvalidArgument naming both GPUs (another kind, or a split that hands out
/// fewer SMs there, with the closest valid request), with `gpu`'s limits.
Result<std::vector<unsigned>> check_on_gpu(const DevicePlan& plan, const PlanGpu& gpu);
/// "0, 1, 3": the devices a plan names.
std::string device_list(const PartitionPlan& plan);

}  // namespace torch_tensorrt::executorch_backend::plan
