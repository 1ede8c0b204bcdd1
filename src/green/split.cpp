#include "green/split.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <utility>

#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::green {
namespace {

// The device's whole SM resource. The runtime's primary context must exist before driver green
// context calls mix with runtime calls on their streams: cudaInitDevice makes it without making it
// current (and, unlike freeing a null pointer to force initialisation, without synchronizing anything).
Result<CUdevResource> device_sm_resource(const cuda::DriverApi& api, int device) {
  TRTET_RETURN_IF_ERROR(cuda::check_device_index(device));
  TRTET_CUDA_CHECK(cudaInitDevice(device, 0, 0));
  CUdevice dev = 0;
  TRTET_CU_CHECK(api.cuDeviceGet(&dev, device));
  CUdevResource sms{};
  TRTET_CU_CHECK(api.cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM));
  return sms;
}

// One partition from `count` resources of the one split, as a green context.
Result<Partition> make_partition(const cuda::DriverApi& api, int device, CUdevResource* resources, unsigned count,
                                 unsigned requested, bool is_remainder) {
  CUdevResourceDesc desc = nullptr;
  TRTET_CU_CHECK(api.cuDevResourceGenerateDesc(&desc, resources, count));
  TRTET_ASSIGN_OR_RETURN(DriverGreenContext context, DriverGreenContext::create(device, desc));
  Partition partition;
  partition.context = std::move(context);
  partition.requested_sms = requested;
  partition.is_remainder = is_remainder;
  return Result<Partition>(std::move(partition));
}

}  // namespace

Result<SmGranularity> device_sm_granularity(int device) {
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  TRTET_ASSIGN_OR_RETURN(CUdevResource sms, device_sm_resource(*api, device));
  SmGranularity granularity;
  granularity.sm_count = sms.sm.smCount;
  granularity.min_partition = sms.sm.minSmPartitionSize;
  granularity.alignment = sms.sm.smCoscheduledAlignment;
  // A simulated split (result == nullptr) says how many unit() groups the driver can really make.
  // Seeded with an upper bound, in case a driver reads it as the most groups wanted.
  unsigned groups = granularity.sm_count;
  TRTET_CU_CHECK(api->cuDevSmResourceSplitByCount(nullptr, &groups, &sms, nullptr, 0, granularity.unit()));
  granularity.max_groups = groups;
  return granularity;
}

Result<std::vector<Partition>> split_device(int device, const SplitRequest& request) {
  TRTET_RETURN_IF_ERROR(check_request(request));  // argument errors first, even without a GPU
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  TRTET_ASSIGN_OR_RETURN(const SmGranularity granularity, device_sm_granularity(device));
  TRTET_ASSIGN_OR_RETURN(const SplitPlan plan, plan_split(granularity, request));
  TRTET_ASSIGN_OR_RETURN(CUdevResource sms, device_sm_resource(*api, device));

  std::vector<CUdevResource> groups(plan.groups);
  CUdevResource remaining{};
  unsigned made = plan.groups;
  TRTET_CU_CHECK(api->cuDevSmResourceSplitByCount(groups.data(), &made, &sms, &remaining, 0, plan.unit));
  TRTET_CHECK_OR_RETURN(made == plan.groups, kInvalidArgument,
                        "the driver made %u groups of %u SMs where %u were planned (%s)", made, plan.unit,
                        plan.groups, format_counts(plan.planned).c_str());

  std::vector<Partition> partitions;
  partitions.reserve(plan.planned.size() + (plan.remainder ? 1 : 0));
  unsigned next = 0;
  for (std::size_t i = 0; i < plan.planned.size(); ++i) {
    const unsigned count = plan.planned[i] / plan.unit;
    TRTET_ASSIGN_OR_RETURN(Partition partition,
                           make_partition(*api, device, &groups[next], count, plan.requested[i], false));
    partitions.push_back(std::move(partition));
    next += count;
  }
  if (plan.remainder) {
    TRTET_CHECK_OR_RETURN(remaining.type == CU_DEV_RESOURCE_TYPE_SM && remaining.sm.smCount > 0, kInvalidArgument,
                          "a remainder partition was asked for, but the split left no SMs over (%s of %u SMs)",
                          format_counts(plan.planned).c_str(), granularity.sm_count);
    TRTET_ASSIGN_OR_RETURN(Partition partition, make_partition(*api, device, &remaining, 1, 0, true));
    partitions.push_back(std::move(partition));
  }
  return Result<std::vector<Partition>>(std::move(partitions));
}

}  // namespace torch_tensorrt::executorch_backend::green
