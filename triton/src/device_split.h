// One split per device, shared by the server's models (device_split.cpp).
#pragma once

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
  std::map<std::string, std::string> taken;   // plan partition -> the instance that took it
  int models = 0;                             // the models that hold it
};

extern std::mutex g_splits_mutex;
extern std::map<int, std::shared_ptr<DeviceSplit>> g_splits;

void release_split(const std::shared_ptr<DeviceSplit>& split, const std::vector<std::string>& partitions_taken);

}  // namespace trtet_triton
