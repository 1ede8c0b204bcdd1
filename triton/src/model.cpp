#include "model.h"

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "model_partitions.h"
#include "model_plan_set.h"

namespace trtet_triton {

using ::executorch::extension::Module;

// ---- the model ----

namespace {

TRITONSERVER_Error* read_config(TRITONBACKEND_Model* model, Json& config) {
  TRITONSERVER_Message* message = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  if (e == nullptr) {
    config = Json::parse(base, base + size, nullptr, false);
    if (config.is_discarded()) e = error(TRITONSERVER_ERROR_INTERNAL, "the server's model config is not JSON");
  }
  TRITONSERVER_Error* d = TRITONSERVER_MessageDelete(message);
  if (d != nullptr) TRITONSERVER_ErrorDelete(d);
  return e;
}

}  // namespace

int device_count(std::string& why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    why = format("cudaGetDeviceCount: %s", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
  }
  if (count == 0) why = "no CUDA device";
  return count;
}

namespace {

// The KIND_GPU instances the config makes, each with its device and partition size.
TRITONSERVER_Error* read_instances(const Json& config, const Parameters& params, int gpus, ModelState& state) {
  auto it = config.find("instance_group");
  if (it == config.end() || !it->is_array() || it->empty()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, "the config has no instance_group");
  }
  std::set<std::string> groups;
  for (const Json& group : *it) {
    const std::string name = group.value("name", std::string());
    const std::string kind = group.value("kind", std::string("KIND_GPU"));
    groups.insert(name);
    if (kind != "KIND_GPU") {
      return error(TRITONSERVER_ERROR_UNSUPPORTED,
                   format("instance group '%s' is %s; a .pte program with TensorRT delegates runs on a GPU only: use "
                          "KIND_GPU",
                          name.c_str(), kind.c_str()));
    }
    std::int64_t count = 1;
    if (group.contains("count")) TRTET_TRITON_RETURN_IF_ERROR(get_int(group["count"], "instance group count", count));
    if (count < 1 || count > 64) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("instance group '%s' has count %lld; the backend takes 1 to 64", name.c_str(),
                          static_cast<long long>(count)));
    }
    std::vector<int> devices;
    if (group.contains("gpus") && group["gpus"].is_array() && !group["gpus"].empty()) {
      for (const Json& g : group["gpus"]) {
        std::int64_t d = 0;
        TRTET_TRITON_RETURN_IF_ERROR(get_int(g, "a gpus entry", d));
        if (d < 0 || d >= gpus) {
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("instance group '%s' names GPU %lld; this machine has %d GPU%s (0 to %d)", name.c_str(),
                              static_cast<long long>(d), gpus, gpus == 1 ? "" : "s", gpus - 1));
        }
        devices.push_back(static_cast<int>(d));
      }
    } else {
      for (int d = 0; d < gpus; ++d) devices.push_back(d);
    }
    unsigned sms = 0;
    auto group_sms = params.group_sms.find(name);
    if (group_sms != params.group_sms.end()) {
      sms = group_sms->second;
    } else if (params.sms.has_value()) {
      sms = *params.sms;
    }
    for (int d : devices) {
      for (std::int64_t k = 0; k < count; ++k) state.places.push_back({name, d, sms, std::string(), -1, false});
    }
  }
  for (const auto& [group, sms] : params.group_sms) {
    if (groups.count(group) == 0) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter 'sms.%s' names no instance group of this model", group.c_str()));
    }
  }
  return nullptr;
}

}  // namespace

TRITONSERVER_Error* initialize_model(TRITONBACKEND_Model* model, ModelState& state) {
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  state.name = name;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &state.version));
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &artifact, &location));
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED, "the model's files are not on a filesystem");
  }
  Json config;
  TRTET_TRITON_RETURN_IF_ERROR(read_config(model, config));

  // 1. Parameters.
  TRTET_TRITON_RETURN_IF_ERROR(parse_parameters(config, state.name, state.parameters));

  // 2. The program file: <version>/<default_model_filename or model.pte>, a plain file name.
  std::string file = config.value("default_model_filename", std::string());
  if (file.empty()) file = "model.pte";
  if (file.find('/') != std::string::npos || file == "." || file == "..") {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("default_model_filename '%s' is not a file name of the version's directory", file.c_str()));
  }
  const std::string version_dir = std::string(location) + "/" + std::to_string(state.version);
  state.program_path = version_dir + "/" + file;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(state.program_path, ec)) {
    return error(TRITONSERVER_ERROR_NOT_FOUND,
                 format("model '%s' version %llu has no program: %s is missing (a model is <name>/<version>/%s)",
                        state.name.c_str(), static_cast<unsigned long long>(state.version), state.program_path.c_str(),
                        file.c_str()));
  }
  std::int64_t max_batch = 0;
  if (config.contains("max_batch_size")) TRTET_TRITON_RETURN_IF_ERROR(get_int(config["max_batch_size"], "max_batch_size", max_batch));
  if (max_batch < 0) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("max_batch_size is %lld; it takes 0 (the program's shapes as they "
                                                        "are) or a batch size (Note [batching requests])",
                                                        static_cast<long long>(max_batch)));
  }
  state.max_batch = max_batch;

  // 3. The method's metadata (no GPU needed): inputs and outputs checked or auto-completed.
  {
    take_executorch_errors();
    Module module(state.program_path, Module::LoadMode::File);
    // The flatbuffer verified before anything of it is read (Note [verifying a program]).
    const etr::Error loaded = module.load(kProgramVerification);
    if (loaded != etr::Error::Ok) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("loading the program " + state.program_path, loaded));
    }
    auto meta = module.method_meta(state.parameters.method);
    if (!meta.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   executorch_failure("the program has no method '" + state.parameters.method + "'", meta.error()));
    }
    // Which tensors are dynamic: the program's flag, read from its flatbuffer (Note [dynamic shapes]).
    std::vector<Dynamism> in_dynamism, out_dynamism;
    std::string why;
    TensorTypes types;
    if (!method_dynamism(state.program_path, state.parameters.method, in_dynamism, out_dynamism, why, &types)) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("the program %s: %s", state.program_path.c_str(), why.c_str()));
    }
    // Every tensor's type one this backend carries, before MethodMeta reads the tensors (it aborts the
    // process on a type it does not know: Note [verifying a program]).
    for (const auto* list : {&types.inputs, &types.outputs}) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        const std::int8_t t = (*list)[i];
        if (t != kNotATensor && data_type_of(static_cast<::executorch::aten::ScalarType>(t)) == nullptr) {
          return error(TRITONSERVER_ERROR_UNSUPPORTED,
                       format("the program's %s %zu has a dtype (%d) Triton cannot carry", list == &types.inputs ? "input" : "output",
                              i, static_cast<int>(t)));
        }
      }
    }
    TRTET_TRITON_RETURN_IF_ERROR(read_io(*meta, true, in_dynamism, state.inputs));
    TRTET_TRITON_RETURN_IF_ERROR(read_io(*meta, false, out_dynamism, state.outputs));
  }
  if (state.max_batch > 0) TRTET_TRITON_RETURN_IF_ERROR(check_batchable(state.inputs, state.outputs, state.max_batch));
  bool autocomplete = false;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelAutoCompleteConfig(model, &autocomplete));
  bool changed = false;
  const bool batched = state.max_batch > 0;
  TRTET_TRITON_RETURN_IF_ERROR(check_io(config, "input", state.inputs, autocomplete, changed, batched));
  TRTET_TRITON_RETURN_IF_ERROR(check_io(config, "output", state.outputs, autocomplete, changed, batched));

  if (changed) {
    if (!config.contains("max_batch_size")) config["max_batch_size"] = 0;
    const std::string text = config.dump();
    TRITONSERVER_Message* message = nullptr;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()));
    TRITONSERVER_Error* e = TRITONBACKEND_ModelSetConfig(model, 1, message);
    TRITONSERVER_Error* d = TRITONSERVER_MessageDelete(message);
    if (d != nullptr) TRITONSERVER_ErrorDelete(d);
    if (e != nullptr) return e;
    log(TRITONSERVER_LOG_INFO, format("model '%s': inputs and outputs auto-completed from the program: inputs %s; outputs %s%s",
                                      state.name.c_str(), io_text(state.inputs).c_str(), io_text(state.outputs).c_str(),
                                      batched ? format("; max_batch_size %lld: requests batched along dim 0 (the "
                                                       "config's dims leave it out)",
                                                       static_cast<long long>(state.max_batch)).c_str()
                                              : ""));
  }

  TRTET_TRITON_RETURN_IF_ERROR(read_plans(state, location));
  TRTET_TRITON_RETURN_IF_ERROR(read_plan_set_file(state, location));

  // 4. The GPU.
  std::string why;
  const int gpus = device_count(why);
  TRTET_TRITON_RETURN_IF_ERROR(check_device_plans(state, gpus, why));
  if (gpus == 0) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("model '%s' needs a CUDA GPU and this machine has none usable (%s): a .pte program with "
                        "TensorRT delegates runs on a GPU only",
                        state.name.c_str(), why.c_str()));
  }
  for (const auto& [device, path] : state.parameters.device_plan_file) {
    if (device >= gpus) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter 'plan_file.%d' names GPU %d; this machine has %d GPU%s", device, device, gpus,
                          gpus == 1 ? "" : "s"));
    }
  }

  // 5. Instance groups, then 6. partitions.
  TRTET_TRITON_RETURN_IF_ERROR(read_instances(config, state.parameters, gpus, state));
  TRTET_TRITON_RETURN_IF_ERROR(acquire_partitions(state));
  return nullptr;
}

}  // namespace trtet_triton
