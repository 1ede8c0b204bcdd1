// What the plan-set GPU tests share: the ladder they make on this GPU, the device's free memory and
// the fixture that makes both ready.
#pragma once

#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "common/gpu.h"

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

// A GPU with green contexts, device 0 current, its plan facts in gpu_ and the ladder in set_
// (skipped where one split cannot hand out the ladder's top plan).
class PlanSetGpuFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    TRTET_SKIP_IF_GREEN_UNSUPPORTED();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    auto gpu = torch_tensorrt::executorch_backend::plan_gpu(0);
    ASSERT_TRUE(gpu.ok()) << gpu.error().message();
    gpu_ = *gpu;
    auto set = ladder_here(gpu_);
    if (!set) GTEST_SKIP() << "one split of '" << gpu_.name << "' hands out too few SMs for the ladder";
    set_ = std::move(*set);
    (void)free_bytes();  // the primary context exists before anything is measured
  }

  torch_tensorrt::executorch_backend::PlanGpu gpu_;
  torch_tensorrt::executorch_backend::PlanSet set_;
};

}  // namespace trtet_test
