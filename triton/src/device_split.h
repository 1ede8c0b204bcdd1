// One split per device, shared by the server's models, and the splits kept for a later load
// (device_split.cpp, Note [keeping a split for the next load]).
#pragma once

#include <cuda_runtime_api.h>

#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "errors.h"
#include "plan_set_serving.h"

namespace trtet_triton {

// A device's split: a plan's partitions (shared by every model naming that plan), a plan set's (the
// same, each plan a split of its own) or one model's own.
struct DeviceSplit {
  int device = -1;
  std::string owner;      // "plan <path>", "plan set <path>" or "model '<name>'"
  std::string plan_text;  // the plan's (or set's) contents: another model's must be the same text
  et::PlannedPartitions planned;              // plan
  std::vector<et::GreenContext> own;          // a model's own split
  std::shared_ptr<SetServing> set;            // a plan set (planned and own empty)
  et::PlanSetPartitions set_parts;            // a plan set's partitions while the split is kept (set null)
  std::map<std::string, std::string> taken;   // plan partition -> the instance that took it
  int models = 0;                             // the models that hold it
  // What a later load must ask for to be given this split again: "plan\n<text>", "sms <counts>" or
  // "set\n<text>"; empty: never kept.
  std::string key;
  // Streams made on a partition by an instance since finalized, for the next instance there (a
  // partition owns its streams until it is destroyed).
  std::map<const et::GreenContext*, std::vector<cudaStream_t>> idle_streams;
};

extern std::mutex g_splits_mutex;
extern std::map<int, std::shared_ptr<DeviceSplit>> g_splits;

void release_split(const std::shared_ptr<DeviceSplit>& split, const std::vector<std::string>& partitions_taken);

// The split an earlier load left on `device` under `key` (then no longer kept), or null. Caller
// holds g_splits_mutex.
std::shared_ptr<DeviceSplit> take_kept_split(int device, const std::string& key);
// The most splits kept for a later load, over all devices; the oldest beyond it is destroyed.
inline constexpr std::size_t kKeptSplits = 4;
// How many are kept now (the tests read it).
std::size_t kept_splits();
// Destroys every kept split (TRITONBACKEND_Finalize: before the process's CUDA state goes).
void drop_kept_splits();

// A stream on `partition` for an instance: one an earlier instance there gave back, or a new one the
// partition owns. Caller holds g_splits_mutex.
et::Result<cudaStream_t> take_partition_stream(DeviceSplit& split, et::GreenContext& partition);
// Gives an instance's stream on `partition` back (idle: nothing left on it).
void give_back_partition_stream(DeviceSplit& split, const et::GreenContext* partition, cudaStream_t stream);

}  // namespace trtet_triton
