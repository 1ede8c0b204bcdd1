// Splitting a device's SMs, in one call, into disjoint green-context partitions.
#pragma once

#include <vector>

#include "common/status.h"
#include "green/driver_green_context.h"
#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend::green {

/// One partition of a split: its green context (which owns the partition's streams) and what was asked.
struct Partition {
  DriverGreenContext context;
  unsigned requested_sms = 0;  ///< as asked (for equal groups: the size chosen); 0 for the remainder
  bool is_remainder = false;   ///< the SMs no requested partition took

  /// The SMs the driver actually granted.
  unsigned granted_sms() const noexcept { return context.sm_count(); }
};

/// The SM resource of `device` (cuDeviceGetDevResource), with group_capacity() as the driver
/// reports it for groups of unit() SMs. Initialises the device's primary context.
/// kInvalidArgument for a bad device index; kNoDevice without a GPU.
Result<SmGranularity> device_sm_granularity(int device);

/// Splits `device` into disjoint partitions as `request` asks (see plan_split for what is rejected,
/// always kInvalidArgument with the granularity and the closest valid request in the message).
///
/// One cuDevSmResourceSplitByCount call cuts the device into groups of unit() SMs; each partition
/// is the union of consecutive groups (cuDevResourceGenerateDesc over several groups), and the
/// remainder, when asked for, is that same call's remaining set. So partitions never overlap and
/// the remainder is never split again. Returns the requested partitions in request order, then the
/// remainder. The device's primary context is initialised (cudaInitDevice); the current device is
/// left as it was.
Result<std::vector<Partition>> split_device(int device, const SplitRequest& request);

}  // namespace torch_tensorrt::executorch_backend::green
