// libtriton_torchtrt_executorch.so: a Triton Inference Server backend that serves .pte programs whose
// TensorRT delegates run on this project's runtime, each GPU instance on a green-context partition of
// its own (docs/SERVING.md).
//
// Load (TRITONBACKEND_ModelInitialize), in this order, so that every refusal names its reason before
// any GPU work: the model's parameters (unknown keys by name), <version>/<model.pte>, the program's
// method metadata against the config's inputs and outputs (or the config auto-completed from them),
// the GPU (none: refused), the instance groups (KIND_GPU only, device indices against the machine),
// then the partitions: one split per device, shared by every model of the server that names the same
// plan file (a plan file naming its devices is checked against every GPU it names first), or one split of
// the model's own from its `sms` parameters.
// Each instance (TRITONBACKEND_ModelInstanceInitialize) takes its partition, makes its stream there
// and loads its own ExecuTorch Module; every execute runs under a CudaStreamGuard on that stream.
#include <cuda_runtime_api.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "errors.h"
#include "execute.h"
#include "fault.h"
#include "gpu_time.h"
#include "instance.h"
#include "keep_awake.h"
#include "model.h"
#include "plan_set_serving.h"
#include "trtet_triton/triton_api.h"

// The entry points use the backend's parts by their names.
using namespace trtet_triton;  // NOLINT(google-build-using-namespace)

namespace {

// The backend's own settings (Note [cores kept awake]); its threads live until TRITONBACKEND_Finalize.
CoresKeptAwake& cores_kept_awake() {
  static CoresKeptAwake cores;
  return cores;
}

// Reads the backend settings this backend takes (keep-cores-awake) and acts on them. The server's
// own keys (backend-directory, default-max-batch-size, ...) are there too and left alone.
TRITONSERVER_Error* apply_backend_config(TRITONBACKEND_Backend* backend) {
  TRITONSERVER_Message* message = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendConfig(backend, &message));
  const char* base = nullptr;
  size_t size = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONSERVER_MessageSerializeToJson(message, &base, &size));
  const nlohmann::json config = nlohmann::json::parse(base, base + size, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return nullptr;  // nothing readable: no settings
  const auto cmdline = config.find("cmdline");
  if (cmdline == config.end() || !cmdline->is_object()) return nullptr;
  const auto awake = cmdline->find("keep-cores-awake");
  if (awake == cmdline->end()) return nullptr;
  if (!awake->is_string()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, "backend setting keep-cores-awake: not a string of cores");
  }
  const std::string cores = awake->get<std::string>();
  std::string why;
  if (!keep_cores_awake(cores, cores_kept_awake(), why)) return error(TRITONSERVER_ERROR_INVALID_ARG, why);
  log(TRITONSERVER_LOG_INFO,
      format("keeping %zu core(s) awake (keep-cores-awake=%s): one thread each at SCHED_IDLE, spinning while "
             "nothing else runs there",
             cores_kept_awake().threads(), cores.c_str()));
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != kTritonBackendApiMajor || minor < kTritonBackendApiMinor) {
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 format("built for the backend API %u.%u; this server offers %u.%u", kTritonBackendApiMajor,
                        kTritonBackendApiMinor, major, minor));
  }
  const char* name = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  TRTET_TRITON_RETURN_IF_ERROR(apply_backend_config(backend));
  etr::register_pal(etr::PalImpl::create(&executorch_log, __FILE__));
  etr::runtime_init();
  make_metric_families();
  make_plan_set_metric_families();
  log(TRITONSERVER_LOG_INFO, format("backend '%s' ready (backend API %u.%u; runtime %s)", name, major, minor,
                                    "torchtrt-executorch " TRTET_TRITON_VERSION));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) {
  if (cores_kept_awake().threads() > 0) {
    const std::size_t threads = cores_kept_awake().threads();
    cores_kept_awake().stop();
    log(TRITONSERVER_LOG_INFO, format("cores kept awake: %zu thread(s) stopped", threads));
  }
  drop_kept_splits();  // every model is finalized before the backend (Note [keeping a split for the next load])
  finish_fault_domain();
  delete_metric_families();  // every instance (and its series) is finalized before the backend
  delete_plan_set_metric_families();  // and every model (its plan set's series)
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  TRITONSERVER_Server* server = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelServer(model, &server));
  remember_server(server);
  // A poisoned process loads nothing: its CUDA context is lost (Note [the fault domain]).
  std::string cause;
  if (process_poisoned(cause)) {
    return error(TRITONSERVER_ERROR_UNAVAILABLE, "this process's CUDA context was lost (" + cause + "); restart the server");
  }
  auto state = std::make_unique<ModelState>();
  TRITONSERVER_Error* e = nullptr;
  try {
    e = initialize_model(model, *state);
  } catch (const std::exception& ex) {
    e = error(TRITONSERVER_ERROR_INTERNAL, std::string("loading the model: ") + ex.what());
  }
  if (e != nullptr) return e;  // the state (and any split it holds) goes with it
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelSetState(model, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  delete static_cast<ModelState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  TRITONBACKEND_Model* model = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* model_state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &model_state));
  auto state = std::make_unique<InstanceState>();
  state->model = static_cast<ModelState*>(model_state);
  state->triton = instance;
  TRITONSERVER_Error* e = nullptr;
  try {
    e = initialize_instance(instance, *state->model, *state);
  } catch (const std::exception& ex) {
    e = error(TRITONSERVER_ERROR_INTERNAL, std::string("loading the instance: ") + ex.what());
  }
  if (e != nullptr) return e;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceSetState(instance, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* state = nullptr;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  delete static_cast<InstanceState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, const std::uint32_t request_count) {
  const std::uint64_t exec_start = now_ns();
  void* raw = nullptr;
  // An error returned here (before any request is touched) leaves the requests the server's: it
  // answers and releases them. From the loop on, the backend owns every request and releases each.
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &raw));
  InstanceState& state = *static_cast<InstanceState*>(raw);
  // A poisoned process serves nothing: each request is answered at once with the first cause.
  std::string cause;
  const bool poisoned = process_poisoned(cause);
  if (!poisoned) (void)cudaSetDevice(state.device);
  ExecuteFinisher finisher(state, exec_start);
  // A batching model's execute of several requests (Triton's dynamic batcher): Note [batching requests].
  if (!poisoned && state.model->max_batch > 0 && request_count > 1) {
    serve_batched(state, requests, request_count, finisher);
    finisher.end();
    return nullptr;
  }
  // Every request gets its response and is released here, success or not: the backend owns them
  // once this function is called, and one request's failure leaves the instance serving the next.
  std::uint64_t previous_end = exec_start;
  for (std::uint32_t r = 0; r < request_count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Response* response = nullptr;
    state.points = RequestPoints{};
    state.points.start = previous_end;
    state.rows = 1;
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&response, request);
    std::uint64_t compute_start = now_ns();
    state.points.response_new = compute_start;
    std::uint64_t compute_end = compute_start;
    if (e == nullptr && poisoned) {
      e = error(TRITONSERVER_ERROR_UNAVAILABLE,
                format("model '%s': this process's CUDA context was lost (%s); the server serves nothing more and "
                       "stops: restart it",
                       state.model->name.c_str(), cause.c_str()));
    } else if (e == nullptr) {
      try {
        e = run_request(state, request, response, compute_start, compute_end);
      } catch (const std::exception& ex) {
        e = error(TRITONSERVER_ERROR_INTERNAL, std::string("serving a request: ") + ex.what());
      } catch (...) {
        e = error(TRITONSERVER_ERROR_INTERNAL, "serving a request: an exception of unknown type");
      }
    }
    if (compute_end < compute_start) compute_end = compute_start;
    FinishedRequest done;
    done.request = request;
    done.response = response;
    done.error = e;
    done.ok = e == nullptr;
    done.compute_start = compute_start;
    done.compute_end = compute_end;
    done.points = state.points;
    done.rows = state.rows;
    finisher.finish(done, r + 1 == request_count);
    previous_end = now_ns();
  }
  finisher.end();
  return nullptr;
}

}  // extern "C"
