#include "instance.h"

#include "finish.h"

#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <mutex>

namespace trtet_triton {

// ---- an instance ----

namespace {

// The group an instance belongs to: its name is <group>_<k> (or the group's name itself).
std::string group_of(const std::string& instance, const ModelState& model) {
  for (const InstancePlace& place : model.places) {
    if (place.group == instance) return place.group;
  }
  const std::size_t cut = instance.find_last_of('_');
  if (cut != std::string::npos && instance.find_first_not_of("0123456789", cut + 1) == std::string::npos) {
    return instance.substr(0, cut);
  }
  return instance;
}

}  // namespace

TRITONSERVER_Error* initialize_instance(TRITONBACKEND_ModelInstance* instance, ModelState& model, InstanceState& state) {
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  state.name = name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_AUTO;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("instance '%s' is not KIND_GPU; a .pte program with TensorRT delegates runs on a GPU only", name));
  }
  std::int32_t device = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device));
  state.device = device;
  std::string why;
  const int gpus = device_count(why);
  if (device < 0 || device >= gpus) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("instance '%s' is on GPU %d; this machine has %d GPU%s", name, device, gpus, gpus == 1 ? "" : "s"));
  }
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("cudaSetDevice(%d): %s", device, cudaGetErrorString(set)));

  // The instance's place: the next one of its group on its device not yet taken.
  const std::string group = group_of(state.name, model);
  InstancePlace* place = nullptr;
  {
    std::lock_guard<std::mutex> lock(model.mutex);
    for (InstancePlace& p : model.places) {
      if (!p.taken && p.group == group && p.device == device) {
        place = &p;
        break;
      }
    }
    if (place == nullptr) {
      return error(TRITONSERVER_ERROR_INTERNAL,
                   format("instance '%s' (group '%s', GPU %d) has no place in the config's instance groups", name,
                          group.c_str(), device));
    }
    place->taken = true;
  }
  auto split = model.splits.find(device);
  if (split != model.splits.end()) {
    std::lock_guard<std::mutex> lock(g_splits_mutex);  // GreenContext::make_stream: one thread at a time
    DeviceSplit& s = *split->second;
    if (s.set != nullptr) {
      // The set's stream for the model is taken again at every call (run_request): a switch moves the next one.
      state.set = s.set.get();
      state.set_model = *model.parameters.set.model;
      state.set_index = state.set->model_index(state.set_model);
      auto stream = state.set->stream(state.set_model);
      if (!stream.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "the plan set's stream: " + stream.error().message());
      state.stream = *stream;
    } else if (!place->plan_partition.empty()) {
      auto planned = s.planned.get(place->plan_partition);  // the name was checked against the plan at load
      if (!planned.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "the plan's partition: " + planned.error().message());
      state.partition = *planned;
    } else if (place->partition_index >= 0) {
      state.partition = &s.own[static_cast<std::size_t>(place->partition_index)];
    }
    if (state.partition != nullptr) {
      auto stream = take_partition_stream(s, *state.partition);  // Note [keeping a split for the next load]
      if (!stream.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "a stream on the partition: " + stream.error().message());
      state.stream = *stream;
      state.split = split->second;
    }
  }
  const StreamPriority priority = model.parameters.priority;
  if (state.stream == nullptr) {
    // The whole GPU: a stream of the instance's own, of the priority the config asks for (CUDA's
    // numbers run from `greatest`, the highest, up to `least`, the default).
    int least = 0, greatest = 0;
    if (priority != StreamPriority::kDefault) {
      const cudaError_t range = cudaDeviceGetStreamPriorityRange(&least, &greatest);
      if (range != cudaSuccess) {
        return error(TRITONSERVER_ERROR_INTERNAL, format("cudaDeviceGetStreamPriorityRange: %s", cudaGetErrorString(range)));
      }
    }
    const int value = priority == StreamPriority::kMax ? greatest : least;
    const cudaError_t made = cudaStreamCreateWithPriority(&state.stream, cudaStreamNonBlocking, value);
    if (made != cudaSuccess) return error(TRITONSERVER_ERROR_INTERNAL, format("cudaStreamCreate: %s", cudaGetErrorString(made)));
    state.own_stream = true;
    state.stream_priority = value;
  } else if (priority != StreamPriority::kDefault) {
    log(TRITONSERVER_LOG_WARN,
        format("model '%s' instance '%s': optimization.priority %s is not applied on a partition's stream (the "
               "partition's SMs are the model's own); it applies to instances on the whole GPU",
               model.name.c_str(), name, stream_priority_name(priority)));
  }

  state.waiter = std::make_unique<StreamWaiter>(model.parameters.stream_wait);

  // The instance's own Module and method, loaded with the model's load-time options.
  take_executorch_errors();
  std::unique_ptr<GpuTimes> tracer;
  if (have_metrics()) {  // the series of GPU times and of request phases (Note [request phases])
    TRITONSERVER_Error* made = state.metrics.make(model.name, model.version, state.name, device);
    if (made == nullptr && model.parameters.gpu_time_every > 0) {
      tracer = std::make_unique<GpuTimes>();
      state.gpu_times = tracer.get();
    } else if (made != nullptr) {
      log(TRITONSERVER_LOG_WARN, format("instance '%s': engine GPU time and request phases not reported: %s", name,
                                        TRITONSERVER_ErrorMessage(made)));
      TRITONSERVER_ErrorDelete(made);
    }
  }
  state.module = std::make_unique<Module>(model.program_path, Module::LoadMode::File, std::move(tracer));
  etr::BackendOptions<8> options;
  for (const auto& option : model.parameters.load_options) {
    const std::string& key = option.first;
    const std::string& value = option.second;
    etr::Error e = etr::Error::InvalidArgument;
    // BackendOptions takes its keys as literals: each key parse_parameters accepts, by name.
    auto set = [&](const auto& literal) {
      if (value == "true" || value == "false") return options.set_option(literal, value == "true");
      if (!value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos) {
        return options.set_option(literal, std::stoi(value));
      }
      return options.set_option(literal, value.c_str());
    };
    if (key == "use_cuda_graphs") e = set("use_cuda_graphs");
    if (key == "cuda_graph_cache_size") e = set("cuda_graph_cache_size");
    if (key == "staging_budget_mb") e = set("staging_budget_mb");
    if (key == "weight_streaming_budget") e = set("weight_streaming_budget");
    if (e != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("load option " + key, e));
  }
  etr::LoadBackendOptionsMap map;
  etr::Error e = map.set_options("TensorRTBackend", options.view());
  if (e == etr::Error::Ok) e = state.module->load(map, kProgramVerification);  // Note [verifying a program]
  if (e == etr::Error::Ok) {
    et::CudaStreamGuard guard(state.stream);
    e = state.module->load_method(model.parameters.method);
  }
  if (e != etr::Error::Ok) {
    return error(e == etr::Error::InvalidArgument ? TRITONSERVER_ERROR_INVALID_ARG : TRITONSERVER_ERROR_INTERNAL,
                 executorch_failure(format("model '%s' instance '%s': loading method '%s'", model.name.c_str(), name,
                                           model.parameters.method.c_str()),
                                    e));
  }
  if (model.parameters.send_from == SendFrom::kCompletionThread) start_completion_thread(state);
  log(TRITONSERVER_LOG_INFO,
      format("model '%s' instance '%s' on GPU %d, %s; stream_wait %s", model.name.c_str(), name, device,
             state.set != nullptr
                 ? format("following plan set %s as '%s' (now %s)", state.set->path().c_str(), state.set_model.c_str(),
                          state.set->where(state.set_model).c_str())
                       .c_str()
             : state.partition != nullptr
                 ? format("a green-context partition of %u SMs%s", state.partition->sm_count(),
                          place->plan_partition.empty() ? "" : (" (plan partition '" + place->plan_partition + "')").c_str())
                       .c_str()
                 : "the whole GPU (no partition asked for)",
             stream_wait_name(model.parameters.stream_wait)) +
          (state.own_stream && priority != StreamPriority::kDefault
               ? format("; %s (stream priority %d)", stream_priority_name(priority), state.stream_priority)
               : std::string()) +
          (state.completer != nullptr ? "; responses sent from a completion thread" : ""));
  return nullptr;
}

}  // namespace trtet_triton
