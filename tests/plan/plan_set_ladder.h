// What the plan-set GPU tests share: the ladder they make on this GPU and the device's free memory.
#pragma once

#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>

namespace trtet_test {

// The ladder on this GPU: the latency model on 2, 3, 4 and 6 granules (16, 24, 32 and 48 SMs on the
// H200), batch on 4, the rest for the others. Nothing where one split here cannot hand out the top plan.
inline std::optional<torch_tensorrt::executorch_backend::PlanSet> ladder_here(
    const torch_tensorrt::executorch_backend::PlanGpu& gpu) {
  namespace et = torch_tensorrt::executorch_backend;
  const unsigned u = gpu.granularity;
  if (10 * u > gpu.max_partitioned_sms || 10 * u >= gpu.sm_count) return std::nullopt;
  et::PlanSet set;
  set.gpu = gpu;
  set.gpu.device = -1;
  for (unsigned granules : {2u, 3u, 4u, 6u}) {
    et::SetPlan p;
    p.name = "latency-" + std::to_string(granules * u);
    p.partitions = {{"latency", granules * u, 250, 0, 0, 0, ""}, {"batch", 4 * u, 2000, 0, 0, 0, ""}};
    p.remainder_name = "others";
    set.plans.push_back(p);
  }
  return set;
}

inline std::size_t free_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) (void)cudaGetLastError();
  return free;
}

inline double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace trtet_test
