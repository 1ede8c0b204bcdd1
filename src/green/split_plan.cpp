#include "green/split_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstddef>
#include <numeric>

namespace torch_tensorrt::executorch_backend::green {
namespace {

// The nearest multiple of `unit` to `count`, ties down, never below `unit`.
unsigned round_to_unit(unsigned count, unsigned unit) {
  const unsigned below = count / unit * unit;
  const unsigned above = below + unit;
  const unsigned nearest = (count - below <= above - count) ? below : above;
  return std::max(nearest, unit);
}

unsigned long long total(const std::vector<unsigned>& counts) {
  return std::accumulate(counts.begin(), counts.end(), 0ULL);
}

// e.g. on the H200 here: "the device has 132 SMs and splits them in groups of 8 (minimum partition 8,
// alignment 8; one split makes at most 15 groups = 120 SMs)"
std::string describe(const SmGranularity& g) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "the device has %u SMs and splits them in groups of %u (minimum partition %u, alignment %u; "
                "one split makes at most %u groups = %u SMs)",
                g.sm_count, g.unit(), g.min_partition, g.alignment, g.group_capacity(),
                g.group_capacity() * g.unit());
  return text;
}

Status plan_counts(const SmGranularity& g, const SplitRequest& request, SplitPlan& plan) {
  const unsigned unit = g.unit();
  const std::vector<unsigned> closest = closest_valid_counts(g, request.sm_counts);
  const std::string closest_text = format_counts(closest);
  for (std::size_t i = 0; i < request.sm_counts.size(); ++i) {
    const unsigned asked = request.sm_counts[i];
    TRTET_CHECK_OR_RETURN(asked <= g.sm_count, kInvalidArgument,
                          "partition %zu asks for %u SMs, more than the device has: %s; closest valid request: %s",
                          i, asked, describe(g).c_str(), closest_text.c_str());
    if (asked % unit != 0) {
      TRTET_CHECK_OR_RETURN(request.round, kInvalidArgument,
                            "partition %zu asks for %u SMs, not a multiple of the %u-SM granularity: %s; "
                            "closest valid request: %s (or ask for rounding)",
                            i, asked, unit, describe(g).c_str(), closest_text.c_str());
    }
    plan.requested.push_back(asked);
    plan.planned.push_back(asked % unit == 0 ? asked : round_to_unit(asked, unit));
  }
  const unsigned long long sms = total(plan.planned);
  TRTET_CHECK_OR_RETURN(sms <= static_cast<unsigned long long>(g.group_capacity()) * unit, kInvalidArgument,
                        "the partitions ask for %llu SMs in all (%s), more than one split can give: %s; "
                        "closest valid request: %s",
                        sms, format_counts(plan.planned).c_str(), describe(g).c_str(), closest_text.c_str());
  plan.groups = static_cast<unsigned>(sms / unit);
  return Status::Ok();
}

Status plan_groups(const SmGranularity& g, const SplitRequest& request, SplitPlan& plan) {
  const unsigned capacity = g.group_capacity();
  TRTET_CHECK_OR_RETURN(request.groups <= capacity, kInvalidArgument,
                        "%u equal groups asked, more than the device can make: %s; closest valid request: %u groups "
                        "of %u SMs",
                        request.groups, describe(g).c_str(), capacity, g.unit());
  const unsigned per_group = capacity / request.groups * g.unit();
  plan.requested.assign(request.groups, per_group);
  plan.planned.assign(request.groups, per_group);
  plan.groups = capacity / request.groups * request.groups;
  return Status::Ok();
}

}  // namespace

unsigned SmGranularity::unit() const noexcept {
  const unsigned align = std::max(alignment, 1u);
  const unsigned min = std::max(min_partition, 1u);
  return (min + align - 1) / align * align;
}

unsigned SmGranularity::group_capacity() const noexcept { return max_groups != 0 ? max_groups : sm_count / unit(); }

SplitRequest SplitRequest::counts(std::vector<unsigned> sm_counts, bool remainder, bool round) {
  SplitRequest request;
  request.sm_counts = std::move(sm_counts);
  request.remainder = remainder;
  request.round = round;
  return request;
}

SplitRequest SplitRequest::equal_groups(unsigned groups, bool remainder) {
  SplitRequest request;
  request.groups = groups;
  request.remainder = remainder;
  return request;
}

Status check_request(const SplitRequest& request) {
  const bool by_counts = !request.sm_counts.empty();
  TRTET_CHECK_OR_RETURN(by_counts || request.groups != 0, kInvalidArgument,
                        "a split needs SM counts (e.g. 16,32) or a number of equal groups; neither was given "
                        "(0 groups asks for no partition)");
  TRTET_CHECK_OR_RETURN(!(by_counts && request.groups != 0), kInvalidArgument,
                        "a split takes SM counts or a number of equal groups, not both (%zu counts, %u groups)",
                        request.sm_counts.size(), request.groups);
  for (std::size_t i = 0; i < request.sm_counts.size(); ++i) {
    TRTET_CHECK_OR_RETURN(request.sm_counts[i] != 0, kInvalidArgument,
                          "partition %zu asks for 0 SMs; every partition needs at least one group of SMs", i);
  }
  return Status::Ok();
}

Result<SplitPlan> plan_split(const SmGranularity& granularity, const SplitRequest& request) {
  TRTET_RETURN_IF_ERROR(check_request(request));
  TRTET_CHECK_OR_RETURN(granularity.sm_count > 0 && granularity.group_capacity() > 0, kNotSupported,
                        "the device cannot be split: %s", describe(granularity).c_str());
  SplitPlan plan;
  plan.unit = granularity.unit();
  if (!request.sm_counts.empty()) {
    TRTET_RETURN_IF_ERROR(plan_counts(granularity, request, plan));
  } else {
    TRTET_RETURN_IF_ERROR(plan_groups(granularity, request, plan));
  }
  plan.remainder = request.remainder;
  plan.remainder_sms = granularity.sm_count - plan.groups * plan.unit;
  TRTET_CHECK_OR_RETURN(!plan.remainder || plan.remainder_sms > 0, kInvalidArgument,
                        "a remainder partition was asked for, but the partitions (%s) take all %u SMs",
                        format_counts(plan.planned).c_str(), granularity.sm_count);
  return plan;
}

std::vector<unsigned> closest_valid_counts(const SmGranularity& granularity, const std::vector<unsigned>& sm_counts) {
  const unsigned unit = granularity.unit();
  const unsigned long long capacity = static_cast<unsigned long long>(granularity.group_capacity()) * unit;
  std::vector<unsigned> closest;
  closest.reserve(sm_counts.size());
  for (unsigned count : sm_counts) {
    closest.push_back(round_to_unit(std::min(count, granularity.sm_count), unit));
  }
  while (total(closest) > capacity) {
    auto largest = std::max_element(closest.begin(), closest.end());
    if (largest == closest.end()) break;
    if (*largest > unit) {
      *largest -= unit;
    } else {
      closest.pop_back();  // every partition is at the minimum: fewer partitions is the nearest fit
    }
  }
  return closest;
}

std::string format_counts(const std::vector<unsigned>& sm_counts) {
  std::string text;
  for (std::size_t i = 0; i < sm_counts.size(); ++i) {
    if (i != 0) text += ',';
    text += std::to_string(sm_counts[i]);
  }
  return text.empty() ? std::string("(none)") : text;
}

}  // namespace torch_tensorrt::executorch_backend::green
