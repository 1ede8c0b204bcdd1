#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/runtime/platform/log.h>

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "blob/parse.h"
#include "common/load_trace.h"
#include "backend/cuda_allocator.h"
#include "backend/delegate_handle.h"
#include "engine/engine_factory.h"
#include "backend/error_map.h"
#include "backend/options.h"
#include "backend/gpu_timing.h"
#include "backend/registration.h"
#include "backend/tensor_views.h"

namespace torch_tensorrt::executorch_backend {
namespace {

namespace et = ::executorch::runtime;

/// The engine's bindings must be the blob's io_bindings, in order (the order ExecuTorch passes
/// arguments in). A blob without io_bindings leaves the order to the engine.
Status check_engine_matches_blob(const engine::Engine& engine, const blob::Metadata& metadata) {
  const auto& bindings = metadata.io_bindings;
  if (bindings.empty()) return Status::Ok();
  TRTET_CHECK_OR_RETURN(engine.io_count() == static_cast<int>(bindings.size()), kInvalidProgram,
                        "the blob lists %zu I/O bindings, its engine has %d", bindings.size(), engine.io_count());
  for (int i = 0; i < engine.io_count(); ++i) {
    const blob::IoBinding& listed = bindings[static_cast<std::size_t>(i)];
    const engine::IoDesc& io = engine.io(i);
    TRTET_CHECK_OR_RETURN(listed.name == io.name && listed.is_input == io.is_input, kInvalidProgram,
                          "binding %d: the blob lists %s \"%s\", the engine has %s \"%s\"", i,
                          listed.is_input ? "input" : "output", listed.name.c_str(), io.is_input ? "input" : "output",
                          io.name.c_str());
  }
  return Status::Ok();
}

/// Builds the engine of a parsed blob through the installed factory.
Result<engine::EnginePtr> build_engine(const blob::ParsedBlob& parsed, std::optional<std::uint64_t> budget,
                                       std::optional<std::string> runtime_library,
                                       std::optional<bool> allow_engine_host_code, const char* method_name) {
  const EngineFactory factory = engine_factory();
  TRTET_CHECK_OR_RETURN(static_cast<bool>(factory), kNotSupported,
                        "no engine factory is installed: this build has no TensorRT adapter (configure with "
                        "TensorRT's headers: TensorRT_ROOT or TensorRT_INCLUDE_DIR), and none was set with "
                        "set_engine_factory()");
  EngineRequest request;
  request.engine_bytes = parsed.engine;
  request.engine_size = parsed.engine_size;
  request.metadata = &parsed.metadata;
  request.device = static_cast<int>(parsed.metadata.device_id);
  request.weight_streaming_budget = budget;
  request.method_name = method_name;
  request.runtime_library = std::move(runtime_library);
  request.allow_engine_host_code = allow_engine_host_code;  // the application's choice alone (docs/SECURITY.md)
  TRTET_ASSIGN_OR_RETURN(engine::EnginePtr engine, factory(request));
  TRTET_CHECK_OR_RETURN(engine != nullptr, kInternal, "the engine factory returned no engine and no error");
  TRTET_RETURN_IF_ERROR(check_engine_matches_blob(*engine, parsed.metadata));
  return engine;
}

/// A DelegateHandle constructed in the method's runtime allocator (freed with the method).
Result<DelegateHandle*> place_handle(et::BackendInitContext& context, engine::EnginePtr engine,
                                     delegate::SessionOptions options) {
  et::MemoryAllocator* allocator = context.get_runtime_allocator();
  TRTET_CHECK_OR_RETURN(allocator != nullptr, kInvalidState, "ExecuTorch gave init no runtime allocator");
  void* memory = allocator->allocate(sizeof(DelegateHandle), alignof(DelegateHandle));
  TRTET_CHECK_OR_RETURN(memory != nullptr, kMemoryAllocationFailed,
                        "the runtime allocator has no room for the delegate handle (%zu bytes)", sizeof(DelegateHandle));
  return new (memory) DelegateHandle(std::move(engine), options);
}

/// init()'s steps after the blob is parsed; `processed` is freed as soon as the engine is built.
Result<DelegateHandle*> load(et::BackendInitContext& context, et::FreeableBuffer* processed,
                             et::ArrayRef<et::CompileSpec> compile_specs) {
  TRTET_CHECK_OR_RETURN(processed != nullptr && processed->data() != nullptr, kInvalidProgram,
                        "the program carries no processed data for this delegate");
  std::optional<TimedStep> step(std::in_place, "delegate: load options");
  TRTET_ASSIGN_OR_RETURN(DelegateOptions options, resolve_delegate_options(compile_specs, context.runtime_specs()));
  step.emplace("delegate: blob parse");
  TRTET_ASSIGN_OR_RETURN(const blob::ParsedBlob parsed, blob::parse_blob(processed->data(), processed->size(), options.blob_limits));

  step.emplace("delegate: engine creation");
  Result<engine::EnginePtr> engine =
      build_engine(parsed, options.weight_streaming_budget, std::move(options.tensorrt_runtime),
                   options.allow_engine_host_code, context.get_method_name());
  processed->Free();  // the engine holds what it needs; `parsed` points at freed memory from here
  Status unavailable;
  if (!engine.ok()) {
    if (engine.status().code() != ErrorCode::kNoDevice) return engine.status();
    unavailable = engine.status();
  }
  step.emplace("delegate: handle");
  TRTET_ASSIGN_OR_RETURN(DelegateHandle* handle,
                         place_handle(context, engine.ok() ? std::move(engine).value() : engine::EnginePtr(), options.session));
  handle->profiler.set_name(delegate_event_name(context.get_method_name(), context.get_runtime_allocator(), handle));
  handle->profiler.set_gpu_every(options.profiling_gpu_every);
  step.reset();
  if (unavailable.ok()) {
    const Status initialized = handle->session.initialize();
    if (initialized.code() == ErrorCode::kNoDevice) {
      unavailable = initialized;
    } else if (!initialized.ok()) {
      handle->~DelegateHandle();
      return initialized;
    }
  }
  if (!unavailable.ok()) {
    handle->no_gpu = make_error(ErrorCode::kNoDevice, "no usable GPU when the method was loaded (%s)",
                                unavailable.message().c_str());
    ET_LOG(Info, "TensorRTBackend init: %s; execute will report it", handle->no_gpu.message().c_str());
  }
  return handle;
}

TensorRTBackend g_backend;

et::Error register_backend_once() noexcept {
  // Device-planned arenas need a CUDA allocator before any program loads (Note [boundary copies]).
  (void)detail::register_cuda_allocator();
  const et::Error error = et::register_backend({TensorRTBackend::kBackendId, &g_backend});
  if (error != et::Error::Ok) {
    ET_LOG(Error, "TensorRTBackend: registering backend id \"%s\" failed with %s%s", TensorRTBackend::kBackendId,
           et::to_string(error),
           error == et::Error::RegistrationAlreadyRegistered
               ? ": another library (e.g. Torch-TensorRT's delegate) registered it first, and programs will use that one"
               : "");
  }
  return error;
}

const et::Error g_registration = register_backend_once();

}  // namespace

const bool detail::kTensorRTBackendRegistered = g_registration == et::Error::Ok;

et::Error registration_status() noexcept { return g_registration; }

bool TensorRTBackend::is_available() const { return true; }

et::Result<et::DelegateHandle*> TensorRTBackend::init(et::BackendInitContext& context, et::FreeableBuffer* processed,
                                                      et::ArrayRef<et::CompileSpec> compile_specs) const {
  // The load path's one exception fence, as execute's.
  Result<DelegateHandle*> handle =
      without_exceptions("init", [&]() -> Result<DelegateHandle*> { return load(context, processed, compile_specs); });
  if (!handle.ok()) {
    if (processed != nullptr) processed->Free();
    return report(handle.status(), DelegatePhase::kInit, "init");
  }
  return static_cast<et::DelegateHandle*>(handle.value());
}

et::Error TensorRTBackend::execute(et::BackendExecutionContext& context, et::DelegateHandle* handle,
                                   et::Span<et::EValue*> args) const {
  if (handle == nullptr) {
    ET_LOG(Error, "TensorRTBackend execute: null delegate handle");
    return et::Error::DelegateInvalidHandle;
  }
  // The execute path's one exception fence: what an engine (or anything below) throws fails the
  // call here, never crossing into ExecuTorch; the session is left as a failed call leaves it
  // (Note [the call schedule] in src/session/call_schedule.h).
  const Status status = without_exceptions("execute", [&]() -> Status {
    DelegateHandle& delegate_handle = *static_cast<DelegateHandle*>(handle);
    TRTET_RETURN_IF_ERROR(delegate_handle.no_gpu);
    // Per-thread scratch, reused across calls: ExecuTorch may call one handle from several threads,
    // and the session's lock is the only one a call takes.
    thread_local std::vector<delegate::TensorView> views;
    TRTET_RETURN_IF_ERROR(make_tensor_views(delegate_handle.session.engine(), args, views));
    // With the method's tracer attached, the call's events go there (Profiling.h); a tracer at
    // kProfileMethodOnly asked for no operator events, and a delegate call is one: not timed.
    et::EventTracer* tracer = context.event_tracer();
    if (tracer != nullptr && tracer->event_tracer_profiling_level() > et::EventTracerProfilingLevel::kProfileMethodOnly) {
      return delegate_handle.profiler.run(*tracer, delegate_handle.session, views.data(), views.size());
    }
    return delegate_handle.session.execute(views.data(), views.size());
  });
  return report(status, DelegatePhase::kExecute, "execute");
}

et::Error TensorRTBackend::set_option(et::BackendOptionContext& context,
                                      const et::Span<et::BackendOption>& backend_options) {
  (void)context;
  const Status status = without_exceptions("set_option", [&]() -> Status {
    return set_process_options(et::Span<const et::BackendOption>(backend_options.data(), backend_options.size()));
  });
  return report(status, DelegatePhase::kInit, "set_option");
}

et::Error TensorRTBackend::get_option(et::BackendOptionContext& context, et::Span<et::BackendOption>& backend_options) {
  (void)context;
  const Status status =
      without_exceptions("get_option", [&]() -> Status { return get_process_options(backend_options); });
  return report(status, DelegatePhase::kInit, "get_option");
}

void TensorRTBackend::destroy(et::DelegateHandle* handle) const {
  if (handle == nullptr) return;
  auto* delegate_handle = static_cast<DelegateHandle*>(handle);
  delegate_handle->profiler.retire();  // logs nothing: the tracer may be finalized or gone (Profiling.h)
  delegate_handle->~DelegateHandle();
}

}  // namespace torch_tensorrt::executorch_backend
