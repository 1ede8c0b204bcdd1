// How a device's SMs can be split, and the pure decision of how a split request maps onto
// that granularity: validation, rounding and the closest valid request, all testable without a GPU.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::green {

/// The SM resource of a device, as cuDeviceGetDevResource reports it, plus what one split can make.
struct SmGranularity {
  unsigned sm_count = 0;       ///< SMs of the device (132 on the H200)
  unsigned min_partition = 0;  ///< CUdevSmResource::minSmPartitionSize (8 on the H200)
  unsigned alignment = 0;      ///< CUdevSmResource::smCoscheduledAlignment (8 on the H200)
  /// Groups of unit() SMs one split call can make; 0 means sm_count / unit(). The driver may make
  /// fewer than the division suggests (cluster and GPC constraints); split_device() asks it.
  unsigned max_groups = 0;

  /// The smallest valid partition: min_partition rounded up to a multiple of alignment (at least 1).
  /// Every partition is a whole number of these groups.
  unsigned unit() const noexcept;
  /// max_groups, or sm_count / unit() where it is 0.
  unsigned group_capacity() const noexcept;
};

/// What a caller asks of split_device(): a list of SM counts or N equal groups (exactly one of them).
struct SplitRequest {
  std::vector<unsigned> sm_counts;  ///< one partition per entry, e.g. {16, 32}
  unsigned groups = 0;              ///< N equal partitions, each as large as the device allows
  bool remainder = false;           ///< also make a partition of the SMs left over
  bool round = false;               ///< round misaligned counts to the nearest valid one instead of rejecting

  static SplitRequest counts(std::vector<unsigned> sm_counts, bool remainder = false, bool round = false);
  static SplitRequest equal_groups(unsigned groups, bool remainder = false);
};

/// The decided split: partition i is planned[i] SMs, made of planned[i] / unit groups of one split.
struct SplitPlan {
  unsigned unit = 0;               ///< SMs per split group
  std::vector<unsigned> requested; ///< per partition, as asked (for equal groups: the size chosen)
  std::vector<unsigned> planned;   ///< per partition, multiples of unit
  unsigned groups = 0;             ///< split groups used by the planned partitions
  bool remainder = false;          ///< a remainder partition follows the planned ones
  unsigned remainder_sms = 0;      ///< SMs expected in the remainder: sm_count - groups * unit
};

/// The checks that need no device: exactly one of sm_counts / groups, no 0-SM partition.
/// kInvalidArgument with a message naming the offending entry.
Status check_request(const SplitRequest& request);

/// Decides `request` against `granularity`. kInvalidArgument, with a message naming the granularity
/// and the closest valid request, for: a 0-SM partition, a count that is not a multiple of unit()
/// (unless request.round), a total beyond what one split can make, more groups than the device
/// holds, a remainder where no SM remains. Rounding goes to the nearest multiple of unit() (ties
/// down, never below unit()); it never shrinks a total that does not fit.
Result<SplitPlan> plan_split(const SmGranularity& granularity, const SplitRequest& request);

/// The valid request nearest to `sm_counts`: each rounded to the nearest multiple of unit() (ties
/// down, at least unit()), then the largest shrunk, then trailing ones dropped, until one split fits.
std::vector<unsigned> closest_valid_counts(const SmGranularity& granularity, const std::vector<unsigned>& sm_counts);

/// "16,32": the form --sms takes.
std::string format_counts(const std::vector<unsigned>& sm_counts);

}  // namespace torch_tensorrt::executorch_backend::green
