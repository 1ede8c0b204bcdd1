// trtet_triton_plan_gpu [device]: the "gpu" fields of a partition plan for this machine's GPU, as JSON
// on one line (what plan_gpu() reads: name, SM count, partition limits), so the GPU tests write plans
// the backend accepts on whatever GPU they run on.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const int device = argc > 1 ? std::atoi(argv[1]) : 0;
  auto gpu = torch_tensorrt::executorch_backend::plan_gpu(device);
  if (!gpu.ok()) {
    std::fprintf(stderr, "trtet_triton_plan_gpu: %s\n", gpu.error().message().c_str());
    return 1;
  }
  std::printf("{\"name\": \"%s\", \"sm_count\": %u, \"min_partition\": %u, \"alignment\": %u, \"granularity\": %u, "
              "\"max_partitioned_sms\": %u}\n",
              gpu->name.c_str(), gpu->sm_count, gpu->min_partition, gpu->alignment, gpu->granularity,
              gpu->max_partitioned_sms);
  return 0;
}
