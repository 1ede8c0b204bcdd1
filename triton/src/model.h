// The model: its state (program, parameters, inputs and outputs, instance places, plans and splits)
// and its load, TRITONBACKEND_ModelInitialize's work (model.cpp).
#pragma once

#include <executorch/runtime/executor/program.h>
#include <torch_tensorrt/executorch/PartitionPlan.h>
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device_split.h"
#include "model_io.h"
#include "parameters.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// Note [verifying a program]
// --------------------------
// A model's program is untrusted. ExecuTorch's Module loads with Verification::Minimal unless told
// otherwise, which checks the file's header only: the flatbuffer's tables are then read as they
// are, and a damaged offset crashes the server in the reads that follow (four random bytes changed
// in the first 4 KiB of a test program: 100 and 103 loads of 400 crashed, security_verification_test
// in tests/security). Every load here (the model's, for its metadata, and each instance's) asks for
// InternalConsistency, which runs the flatbuffer's verifier over the whole program first (every
// offset and length within the file): the same damage was refused in 361 and 364 loads of 400, and
// one load crashed. That one is the verifier's gap: an unknown scalar type on a
// dynamic tensor, on which MethodMeta's tensor_meta aborts the process; the backend reads each
// input's and output's type in its own walk of the flatbuffer (program_shapes.h) and refuses a type
// it does not carry before MethodMeta reads any tensor.
inline constexpr auto kProgramVerification = ::executorch::runtime::Program::Verification::InternalConsistency;

// One KIND_GPU instance as the config makes it: its group, device and partition size (0: whole GPU).
struct InstancePlace {
  std::string group;
  int device = 0;
  unsigned sms = 0;
  std::string plan_partition;  // with a plan
  int partition_index = -1;    // in the device's own split
  bool taken = false;
};

struct ModelState {
  std::string name;
  std::uint64_t version = 0;
  std::string program_path;
  Parameters parameters;
  std::int64_t max_batch = 0;  // the config's max_batch_size: > 0, requests batched along dim 0 (Note [batching requests])
  std::vector<IoSpec> inputs;
  std::vector<IoSpec> outputs;
  std::vector<InstancePlace> places;
  std::map<int, std::shared_ptr<DeviceSplit>> splits;  // by device
  struct Plan {
    std::string path;  // resolved
    std::string text;
    et::PartitionPlan plan;  // any_device(): for every device the model is on
  };
  std::map<std::string, Plan> plans;  // by the parameter's value, read and checked before the GPU
  struct SetFile {
    std::string path;  // resolved
    std::string text;
    et::PlanSet set;
  };
  std::optional<SetFile> plan_set;  // plan_set_file, read and checked before the GPU
  std::mutex mutex;                                      // places' `taken` (instances load in parallel)
  std::map<int, std::vector<std::string>> partitions_taken;  // plan partitions by device, released with the model

  ~ModelState() {
    for (auto& [device, split] : splits) {
      if (split->set != nullptr) split->set->leave(name);  // its target and series go first
      release_split(split, partitions_taken[device]);
    }
  }
};

int device_count(std::string& why);
TRITONSERVER_Error* initialize_model(TRITONBACKEND_Model* model, ModelState& state);

}  // namespace trtet_triton
