// GPU tests of partition plans (torch_tensorrt/executorch/PartitionPlan.h) and of the limit the
// planner plans within: what the driver really grants when one split cuts every GPU of this
// machine (printed for the record: docs/PLANNING.md, "The GPU's limits"), a plan applied on this
// GPU, and a plan from a GPU of another shape refused on the real device.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <gtest/gtest.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "cuda/driver.h"
#include "common/error_match.h"
#include "green/probe.h"

namespace torch_tensorrt::executorch_backend {
namespace {

std::string ranges(const std::vector<int>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return text;
}

// For every visible GPU: the SM resource, what a simulated split (result == NULL) says it would
// make for each minimum count, and what a real split makes (each group's SMs and the remainder's).
// Then the same through the library, and each 8-SM group's SM ids by the SM probe. The driver
// keeps each group inside one GPC (smCoscheduledAlignment SMs are "guaranteed to be co-scheduled on
// the same GPU processing cluster", cuda.h), so a GPC whose SM count is not a multiple of the group
// size leaves SMs to the remainder: 132 SMs in GPCs of 16 and 18 give 16 groups (128 SMs); one
// GPC of 14 among them gives 15 (120). Which holds depends on the chip, not on the model.
TEST(PlanGpu, WhatTheDriverGrantsInOneSplit) {
  TRTET_REQUIRE_GPU();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto api = cuda::driver();
  ASSERT_TRUE(api.ok()) << api.status().message();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  for (int device = 0; device < devices; ++device) {
    ASSERT_EQ(cudaInitDevice(device, 0, 0), cudaSuccess);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, device), cudaSuccess);
    CUdevice dev = 0;
    ASSERT_EQ((*api)->cuDeviceGet(&dev, device), CUDA_SUCCESS);
    CUdevResource sms{};
    ASSERT_EQ((*api)->cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    std::printf("device %d: %s (%s), %u SMs, minSmPartitionSize %u, smCoscheduledAlignment %u\n", device, prop.name,
                prop.pciBusID >= 0 ? ("PCI bus " + std::to_string(prop.pciBusID)).c_str() : "", sms.sm.smCount,
                sms.sm.minSmPartitionSize, sms.sm.smCoscheduledAlignment);
    for (unsigned min_count = 8; min_count <= 64; min_count += 8) {
      unsigned groups = sms.sm.smCount;
      const CUresult r = (*api)->cuDevSmResourceSplitByCount(nullptr, &groups, &sms, nullptr, 0, min_count);
      std::printf("  simulated split, minCount %2u: %s %2u groups = %3u SMs\n", min_count,
                  r == CUDA_SUCCESS ? "" : "(refused)", r == CUDA_SUCCESS ? groups : 0,
                  r == CUDA_SUCCESS ? groups * min_count : 0);
    }
    for (unsigned min_count : {1u, 2u, 8u}) {
      unsigned groups = sms.sm.smCount;
      const CUresult r = (*api)->cuDevSmResourceSplitByCount(nullptr, &groups, &sms, nullptr,
                                                             CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, min_count);
      std::printf("  simulated split, IGNORE_SM_COSCHEDULING, minCount %u: %s%u groups\n", min_count,
                  r == CUDA_SUCCESS ? "" : "(refused) ", r == CUDA_SUCCESS ? groups : 0);
    }
    const unsigned unit = std::max(sms.sm.minSmPartitionSize, sms.sm.smCoscheduledAlignment);
    unsigned made = sms.sm.smCount;
    std::vector<CUdevResource> groups(made);
    CUdevResource remaining{};
    ASSERT_EQ((*api)->cuDevSmResourceSplitByCount(groups.data(), &made, &sms, &remaining, 0, unit), CUDA_SUCCESS);
    unsigned granted = 0;
    std::string sizes;
    for (unsigned g = 0; g < made; ++g) {
      granted += groups[g].sm.smCount;
      sizes += (g ? "," : "") + std::to_string(groups[g].sm.smCount);
    }
    std::printf("  real split, minCount %u: %u groups (%s) = %u SMs; remainder %u SMs\n", unit, made, sizes.c_str(),
                granted, remaining.sm.smCount);
    EXPECT_EQ(granted + remaining.sm.smCount, sms.sm.smCount);

    auto limits = green_context_limits(device);
    ASSERT_TRUE(limits.ok()) << limits.error().message();
    std::printf("  the library: granularity %u, at most %u SMs in one split (README says 128 of 132 for the H200)\n",
                limits->granularity, limits->max_partitioned_sms);
    EXPECT_EQ(limits->max_partitioned_sms, granted) << "the simulated split and the real one disagree";

    // The most one split gives is granted; one group more is refused, naming the limit.
    {
      auto whole = split_device(device, {limits->max_partitioned_sms}, Remainder::kKeep);
      ASSERT_TRUE(whole.ok()) << whole.error().message();
      EXPECT_EQ(whole->front().sm_count(), limits->max_partitioned_sms);
      std::printf("  split_device({%u}, kKeep): %u SMs + remainder %u SMs\n", limits->max_partitioned_sms,
                  whole->front().sm_count(), whole->back().sm_count());
    }
    if (limits->max_partitioned_sms + limits->granularity <= limits->sm_count) {
      auto more = split_device(device, {limits->max_partitioned_sms + limits->granularity});
      ASSERT_FALSE(more.ok());
      TRTET_EXPECT_ERROR_SAYS(more, "= " + std::to_string(limits->max_partitioned_sms) + " SMs");
      std::printf("  split_device({%u}) refused: %s\n", limits->max_partitioned_sms + limits->granularity,
                  more.error().message().c_str());
    }
    // Where each group's SMs are (SM ids by the probe): the GPCs' shape shows through.
    std::vector<unsigned> eights(limits->max_partitioned_sms / limits->granularity, limits->granularity);
    auto parts = split_device(device, eights, Remainder::kKeep);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    for (std::size_t i = 0; i < parts->size(); ++i) {
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      auto ids = green::probe_sms((*parts)[i].stream());
      ASSERT_TRUE(ids.ok()) << ids.status().message();
      std::printf("  %s %2zu: %3u SMs, SM ids %s\n", (*parts)[i].is_remainder() ? "remainder" : "group    ", i,
                  (*parts)[i].sm_count(), ranges(*ids).c_str());
    }
  }
}

DevicePlan device_plan_for(const PlanGpu& gpu, std::vector<std::pair<std::string, unsigned>> sizes,
                           std::string rest, int device = kAnyDevice) {
  DevicePlan plan;
  plan.device = device;
  plan.gpu = gpu;
  for (auto& [name, sms] : sizes) {
    PlanPartition p;
    p.name = name;
    p.sms = sms;
    p.p99_target_us = 100;
    plan.partitions.push_back(p);
  }
  plan.remainder_name = std::move(rest);
  return plan;
}

// A plan for any device.
PartitionPlan plan_for(const PlanGpu& gpu, std::vector<std::pair<std::string, unsigned>> sizes, std::string rest) {
  return PartitionPlan::of(device_plan_for(gpu, std::move(sizes), std::move(rest)));
}

TEST(PlanGpu, APlanIsAppliedByName) {
  TRTET_REQUIRE_GPU();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto gpu = plan_gpu(0);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  EXPECT_EQ(gpu->device, 0);
  const unsigned u = gpu->granularity;
  // Written to a file and read back, as a user does.
  auto text = partition_plan_json(plan_for(*gpu, {{"chat", 2 * u}, {"vision", 4 * u}}, "headroom"));
  ASSERT_TRUE(text.ok()) << text.error().message();
  auto plan = parse_partition_plan(*text);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  auto parts = apply_partition_plan(*plan, 0);
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  EXPECT_EQ(parts->names(), (std::vector<std::string>{"chat", "vision", "headroom"}));
  const auto named = [&](const char* name) -> GreenContext* {
    auto found = parts->get(name);
    return found.ok() ? *found : nullptr;
  };
  GreenContext* chat = named("chat");
  GreenContext* vision = named("vision");
  GreenContext* rest = named("headroom");
  ASSERT_NE(chat, nullptr);
  ASSERT_NE(vision, nullptr);
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(chat->sm_count(), 2 * u);
  EXPECT_EQ(vision->sm_count(), 4 * u);
  EXPECT_TRUE(rest->is_remainder());
  EXPECT_EQ(rest->sm_count(), gpu->sm_count - 6 * u);
  auto chat_sms = green::probe_sms(chat->stream());
  auto vision_sms = green::probe_sms(vision->stream());
  ASSERT_TRUE(chat_sms.ok() && vision_sms.ok());
  EXPECT_LE(chat_sms->size(), 2u * u);
  EXPECT_LE(vision_sms->size(), 4u * u);
  EXPECT_EQ(green::shared_sms(*chat_sms, *vision_sms), 0u);
  EXPECT_FALSE(parts->get("audio").ok());
  // Without a remainder the SMs left stay unused.
  auto bare = apply_partition_plan(plan_for(*gpu, {{"only", u}}, ""), 0);
  ASSERT_TRUE(bare.ok()) << bare.error().message();
  EXPECT_EQ(bare->names().size(), 1u);
}

TEST(PlanGpu, APlanFromAnotherGpuShapeIsRefusedHere) {
  TRTET_REQUIRE_GPU();
  auto gpu = plan_gpu(0);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  PlanGpu other = *gpu;
  other.sm_count += other.granularity;
  other.name = "a GPU with more SMs";
  auto parts = apply_partition_plan(plan_for(other, {{"chat", other.granularity}}, "headroom"), 0);
  ASSERT_FALSE(parts.ok());
  TRTET_EXPECT_ERROR(parts, GreenContextErrc::kInvalidArgument, "it was made on 'a GPU with more SMs'",
                     "but this GPU is '" + gpu->name + "'");
  EXPECT_EQ(parts.error().limits().device, 0);
  EXPECT_EQ(parts.error().limits().sm_count, gpu->sm_count);
  std::printf("refused: %s\n", parts.error().message().c_str());
  // A plan needing more than this GPU's split hands out (made where a split gave every SM in groups).
  PlanGpu roomier = *gpu;
  roomier.max_partitioned_sms = gpu->sm_count / gpu->granularity * gpu->granularity;
  if (roomier.max_partitioned_sms > gpu->max_partitioned_sms) {
    auto big = apply_partition_plan(plan_for(roomier, {{"all", roomier.max_partitioned_sms}}, ""), 0);
    ASSERT_FALSE(big.ok());
    TRTET_EXPECT_ERROR_SAYS(big, "but only " + std::to_string(gpu->max_partitioned_sms) + " on this one");
    EXPECT_FALSE(big.error().closest_valid().empty());
    std::printf("refused: %s\n", big.error().message().c_str());
  }
}

// Several GPUs (a plan naming each device): every device the plan names is split as its plan says, the
// partitions found by (device, name), each on its own device; on a machine with fewer GPUs than the
// plans name, refused naming the count; a device of another shape refused naming the device.
TEST(PlanGpu, SeveralGpuPlansApplyOnEachDevice) {
  TRTET_REQUIRE_GPU();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  PartitionPlan plans;
  for (int d = 0; d < std::min(count, 2); ++d) {
    auto gpu = plan_gpu(d);
    ASSERT_TRUE(gpu.ok()) << gpu.error().message();
    const unsigned u = gpu->granularity;
    plans.devices.push_back(device_plan_for(*gpu, {{"chat", (2 + d) * u}, {"vision", 4 * u}}, "headroom", d));
  }
  auto text = partition_plan_json(plans);
  ASSERT_TRUE(text.ok()) << text.error().message();
  auto read = parse_partition_plan(*text);
  ASSERT_TRUE(read.ok()) << read.error().message();
  {
    auto parts = apply_partition_plan(*read);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    EXPECT_EQ(parts->devices().size(), plans.devices.size());
    for (const DevicePlan& d : plans.devices) {
      auto found = parts->get(d.device, "chat");
      ASSERT_TRUE(found.ok()) << "GPU " << d.device << ": " << found.error().message();
      GreenContext* chat = *found;
      EXPECT_EQ(chat->device(), d.device);
      EXPECT_EQ(chat->sm_count(), d.partitions[0].sms);
      auto sms = green::probe_sms(chat->stream());
      ASSERT_TRUE(sms.ok()) << sms.error().message();
      EXPECT_LE(sms->size(), chat->sm_count()) << "GPU " << d.device;
      auto headroom = parts->get(d.device, "headroom");
      ASSERT_TRUE(headroom.ok()) << headroom.error().message();
      EXPECT_TRUE((*headroom)->is_remainder());
    }
    EXPECT_FALSE(parts->get(count, "chat").ok());
  }
  // One device more than the machine has: refused by the count, before any split.
  PartitionPlan more = *read;
  more.devices.push_back(more.devices.back());
  more.devices.back().device = count;
  auto refused = apply_partition_plan(more);
  ASSERT_FALSE(refused.ok());
  TRTET_EXPECT_ERROR(refused, GreenContextErrc::kInvalidArgument, "this machine has " + std::to_string(count) + " GPU");
  std::printf("refused: %s\n", refused.error().message().c_str());
  // Device 0's plan from another GPU shape: refused naming device 0, nothing split.
  PartitionPlan other = *read;
  other.devices[0].gpu.name = "a GPU of another kind";
  auto shape = apply_partition_plan(other);
  ASSERT_FALSE(shape.ok());
  TRTET_EXPECT_ERROR_SAYS(shape, "partition plan: device 0: it was made on 'a GPU of another kind'");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
