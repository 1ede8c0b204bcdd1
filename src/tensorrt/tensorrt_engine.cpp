#include "tensorrt/tensorrt_engine.h"

#include <algorithm>

#include <cstdlib>
#include <string>
#include <utility>

#include "common/escape.h"
#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "tensorrt/logger.h"
#include "tensorrt/mapping.h"
#include "tensorrt/runtime_search.h"
#include "tensorrt/version.h"
#include "tensorrt/weight_streaming.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

/// A tensor name (the program's) quoted in a message: control characters escaped.
std::string quoted(const std::string& name) { return escape_for_message(name, 128); }

/// What mapping.h needs to know about each of the engine's I/O tensors.
Result<std::vector<EngineTensor>> read_tensors(const nvinfer1::ICudaEngine& engine) {
  const std::int32_t count = engine.getNbIOTensors();
  TRTET_CHECK_OR_RETURN(count >= 0, kInternal, "TensorRT reports %d I/O tensors", static_cast<int>(count));
  std::vector<EngineTensor> tensors(static_cast<std::size_t>(count));
  for (std::int32_t i = 0; i < count; ++i) {
    const char* name = engine.getIOTensorName(i);
    TRTET_CHECK_OR_RETURN(name != nullptr, kInternal, "TensorRT gives I/O tensor %d no name", static_cast<int>(i));
    EngineTensor& tensor = tensors[static_cast<std::size_t>(i)];
    tensor.name = name;
    tensor.mode = engine.getTensorIOMode(name);
    tensor.dtype = engine.getTensorDataType(name);
    tensor.shape = engine.getTensorShape(name);
    tensor.profile_min.nbDims = -1;
    tensor.profile_max.nbDims = -1;
    if (tensor.mode == nvinfer1::TensorIOMode::kINPUT) {
      tensor.profile_min = engine.getProfileShape(name, 0, nvinfer1::OptProfileSelector::kMIN);
      tensor.profile_max = engine.getProfileShape(name, 0, nvinfer1::OptProfileSelector::kMAX);
    }
    tensor.shape_tensor = engine.isShapeInferenceIO(name);
    tensor.on_host = engine.getTensorLocation(name) == nvinfer1::TensorLocation::kHOST;
    tensor.linear = engine.getTensorFormat(name, 0) == nvinfer1::TensorFormat::kLINEAR;
#if TRTET_TENSORRT_HAS_ALIAS_QUERY
    if (tensor.mode == nvinfer1::TensorIOMode::kOUTPUT) {
      const char* aliased = engine.getAliasedInputTensor(name);
      if (aliased != nullptr) tensor.aliased_input = aliased;
    }
#endif
  }
  return tensors;
}

/// "[2, 4]" for any Dims, including ones shape_from_dims refuses ("[-1]", "(no rank)").
std::string dims_text(const nvinfer1::Dims& dims) {
  if (dims.nbDims < 0) return "(no rank)";
  std::string text = "[";
  for (std::int32_t d = 0; d < dims.nbDims; ++d) text += (d > 0 ? ", " : "") + std::to_string(dims.d[d]);
  return text + "]";
}

/// True for handles TensorRT refuses as auxiliary streams: null (legacy default), legacy, per-thread.
bool is_default_stream(cudaStream_t stream) noexcept {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

}  // namespace

Result<std::unique_ptr<TensorRTEngine>> TensorRTEngine::create(const EngineRequest& request) {
  TRTET_CHECK_OR_RETURN(request.engine_bytes != nullptr && request.engine_size > 0, kInvalidProgram,
                        "the blob holds no serialized TensorRT engine (%zu bytes)", request.engine_size);
  TRTET_CHECK_OR_RETURN(request.metadata != nullptr, kInvalidArgument, "the engine request carries no blob metadata");
  // The library first: without TensorRT the answer is kNotSupported, GPU or not.
  // Host code in engines (Note [Engine host code] in runtime_search.h): off unless the application allows it.
  TRTET_ASSIGN_OR_RETURN(const HostCodePolicy host_code,
                         choose_host_code_policy(request.allow_engine_host_code,
                                                 std::getenv(kAllowEngineHostCodeEnvironmentVariable)));
  TRTET_ASSIGN_OR_RETURN(const RuntimeSearch search,
                         choose_runtime_search(request.runtime_library, std::getenv(kRuntimeEnvironmentVariable),
                                               NV_TENSORRT_MAJOR, host_code));
  TRTET_ASSIGN_OR_RETURN(std::shared_ptr<const RuntimeLibrary> library,
                         acquire_runtime_library(search, static_cast<std::int32_t>(kHeaderVersion)));
  if (library->kind() == RuntimeKind::kDispatch && !host_code.allowed) {
    return dispatch_needs_host_code(library->label() + " at " + library->path());
  }
  TRTET_RETURN_IF_ERROR(cuda::check_device_index(request.device));
  cuda::DeviceGuard device(request.device);
  TRTET_RETURN_IF_ERROR(device.status());

  std::unique_ptr<TensorRTEngine> engine(new TensorRTEngine(request.device, std::move(library)));
  engine->host_code_allowed_ = host_code.allowed;
  TRTET_RETURN_IF_ERROR(engine->deserialize(request));
  TRTET_RETURN_IF_ERROR(engine->read_bindings(*request.metadata));
  TRTET_RETURN_IF_ERROR(engine->read_profiles());
  if (engine->profile_count() > 1) {
    log(LogLevel::kDebug, "%s engine%s%s has %d optimization profiles; each call uses the tightest that holds its shapes",
        engine->label_.c_str(), request.method_name != nullptr ? " of method " : "",
        request.method_name != nullptr ? request.method_name : "", engine->profile_count());
  }
  TRTET_RETURN_IF_ERROR(engine->apply_weight_streaming_budget(request));
  TRTET_RETURN_IF_ERROR(engine->create_context());
  engine->aux_stream_count_ = engine->engine_->getNbAuxStreams();
  return engine;
}

TensorRTEngine::TensorRTEngine(int device, std::shared_ptr<const RuntimeLibrary> library)
    : device_(device), library_(std::move(library)), label_(library_->label()) {}

TensorRTEngine::~TensorRTEngine() {
  cuda::DeviceGuard device(device_);  // TensorRT frees device memory in these destructors
  context_ = nullptr;
  contexts_.clear();
  if (housekeeping_stream_ != nullptr) {
    for (cuda::DeviceBuffer& memory : context_memory_) memory.set_stream(housekeeping_stream_);
    context_memory_.clear();  // in stream order: the delegate waited for the engine's work
    TRTET_CUDA_WARN(cudaStreamDestroy(housekeeping_stream_));
  }
  engine_.reset();
  runtime_.reset();
}  // library_ is released after them (member order)

Status TensorRTEngine::deserialize(const EngineRequest& request) {
  Logger& runtime_logger = logger_for(label_);
  clear_last_error();
  void* created = library_->create_runtime(static_cast<nvinfer1::ILogger*>(&runtime_logger),
                                           static_cast<std::int32_t>(kHeaderVersion));
  // TensorRT 11.4's lean and dispatch runtimes return a non-null, unusable pointer when CUDA cannot
  // be initialized, and log the error: a logged error means no runtime (the pointer is not deleted).
  const std::string create_error = last_error_suffix();
  TRTET_CHECK_OR_RETURN(created != nullptr && create_error.empty(), kInternal, "%s could not create a runtime%s",
                        label_.c_str(), create_error.c_str());
  runtime_.reset(static_cast<nvinfer1::IRuntime*>(created));
  // Said on every runtime, never left to TensorRT's default: the engine bytes are the program's, and
  // only the application may let them bring native code (Note [Engine host code] in runtime_search.h).
  runtime_->setEngineHostCodeAllowed(host_code_allowed_);
  clear_last_error();
  engine_.reset(runtime_->deserializeCudaEngine(request.engine_bytes, request.engine_size));
  // TensorRT's reason first (a host's log line may be short), then what each runtime can run.
  TRTET_CHECK_OR_RETURN(engine_ != nullptr, kInvalidProgram,
                        "%s could not deserialize the engine (%zu bytes)%s [the full runtime runs plans of its own "
                        "version, the lean runtime version-compatible plans of its version, the dispatch runtime "
                        "version-compatible plans that embed their lean runtime; a plan runs only on the GPU it was "
                        "built for unless built hardware-compatible; %s]",
                        label_.c_str(), request.engine_size, last_error_suffix().c_str(),
                        host_code_allowed_ ? "engine host code is allowed"
                                           : "plans that carry host code (an embedded lean runtime, plugin "
                                             "libraries) load only with the load-time option "
                                             "allow_engine_host_code=true");
  return Status::Ok();
}

Status TensorRTEngine::read_bindings(const blob::Metadata& metadata) {
  Result<std::vector<EngineTensor>> tensors = read_tensors(*engine_);
  Status status = tensors.status();
  if (status.ok()) {
    Result<std::vector<engine::IoDesc>> io = bind_by_name(metadata, tensors.value());
    status = io.status();
    if (io.ok()) io_ = std::move(io).value();
  }
  if (status.ok()) {
    Result<std::vector<engine::Alias>> aliases = map_aliases(metadata, io_, tensors.value());
    status = aliases.status();
    if (aliases.ok()) aliases_ = std::move(aliases).value();
  }
  if (status.ok()) return status;
  return Status(status.code(), "the engine deserialized by " + label_ + " does not fit the blob: " + status.message());
}

Status TensorRTEngine::apply_weight_streaming_budget(const EngineRequest& request) {
  streamable_bytes_ = engine_->getStreamableWeightsSize();
  std::optional<std::int64_t> automatic;
  if (streamable_bytes_ > 0 && !request.weight_streaming_budget.has_value()) {
    automatic = engine_->getWeightStreamingAutomaticBudget();
  }
  const WeightStreamingPlan plan = plan_weight_streaming(streamable_bytes_, request.weight_streaming_budget, automatic);
  if (plan.ignored) {
    log(LogLevel::kWarning,
        "weight_streaming_budget %llu ignored: the %s engine was not built for weight streaming (no streamable "
        "weights)",
        static_cast<unsigned long long>(*request.weight_streaming_budget), label_.c_str());
  }
  if (plan.budget.has_value()) {
    clear_last_error();
    TRTET_CHECK_OR_RETURN(engine_->setWeightStreamingBudgetV2(*plan.budget), kInvalidArgument,
                          "%s rejected weight-streaming budget %lld (%s; the engine streams up to %lld bytes)%s",
                          label_.c_str(), static_cast<long long>(*plan.budget), to_string(plan.source),
                          static_cast<long long>(streamable_bytes_), last_error_suffix().c_str());
  }
  if (streamable_bytes_ <= 0) return Status::Ok();  // TensorRT's budget calls are for streaming engines only
  budget_ = engine_->getWeightStreamingBudgetV2();
  weight_streaming_ = streams_weights(streamable_bytes_, *budget_);
  log(LogLevel::kInfo, "%s weight streaming: budget %lld of %lld streamable bytes (%s)%s", label_.c_str(),
      static_cast<long long>(*budget_), static_cast<long long>(streamable_bytes_), to_string(plan.source),
      weight_streaming_ ? "; weights stream in during enqueue, which is synchronous" : "; all weights resident");
  return Status::Ok();
}

Status TensorRTEngine::create_context() {
  clear_last_error();
  contexts_.resize(profiles_.size());
  context_memory_.resize(profiles_.size());
  contexts_[0].reset(engine_->createExecutionContext(nvinfer1::ExecutionContextAllocationStrategy::kSTATIC));
  TRTET_CHECK_OR_RETURN(contexts_[0] != nullptr, kInternal, "%s could not create an execution context%s",
                        label_.c_str(), last_error_suffix().c_str());
  context_ = contexts_[0].get();
  if (profiles_.size() > 1) {
    TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&housekeeping_stream_, cudaStreamNonBlocking));
  }
  return Status::Ok();
}

Status TensorRTEngine::read_profiles() {
  const std::int32_t count = engine_->getNbOptimizationProfiles();
  TRTET_CHECK_OR_RETURN(count >= 1, kInvalidProgram, "the %s engine reports %d optimization profiles", label_.c_str(),
                        static_cast<int>(count));
  profiles_.assign(static_cast<std::size_t>(count), std::vector<engine::ShapeBounds>(io_.size()));
  for (std::int32_t p = 0; p < count; ++p) {
    for (std::size_t i = 0; i < io_.size(); ++i) {
      const engine::IoDesc& io = io_[i];
      engine::ShapeBounds& bounds = profiles_[static_cast<std::size_t>(p)][i];
      bounds = engine::ShapeBounds{io.min_shape, io.max_shape};  // outputs, static inputs, profile 0
      if (!io.is_input || p == 0) continue;
      const nvinfer1::Dims low = engine_->getProfileShape(io.name.c_str(), p, nvinfer1::OptProfileSelector::kMIN);
      const nvinfer1::Dims high = engine_->getProfileShape(io.name.c_str(), p, nvinfer1::OptProfileSelector::kMAX);
      if (low.nbDims < 0 && high.nbDims < 0) continue;  // a static input: its shape in every profile
      Result<Shape> min_shape = shape_from_dims(low);
      Result<Shape> max_shape = shape_from_dims(high);
      TRTET_CHECK_OR_RETURN(min_shape.ok() && max_shape.ok() && min_shape->rank == io.min_shape.rank &&
                                max_shape->rank == io.min_shape.rank,
                            kInvalidProgram,
                            "the %s engine's optimization profile %d has unusable bounds for input \"%s\" (%s..%s; "
                            "profile 0 has rank %d)",
                            label_.c_str(), static_cast<int>(p), quoted(io.name).c_str(), dims_text(low).c_str(),
                            dims_text(high).c_str(), io.min_shape.rank);
      bounds = engine::ShapeBounds{*min_shape, *max_shape};
    }
  }
  return Status::Ok();
}

engine::ShapeBounds TensorRTEngine::input_bounds(int profile, int index) const {
  if (profile < 0 || profile >= profile_count() || index < 0 || index >= io_count()) {
    return engine::ShapeBounds{};
  }
  return profiles_[static_cast<std::size_t>(profile)][static_cast<std::size_t>(index)];
}

Status TensorRTEngine::select_profile(int profile, cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(profile >= 0 && profile < profile_count(), kInvalidArgument,
                        "select_profile: the %s engine has %d optimization profiles, not profile %d", label_.c_str(),
                        profile_count(), profile);
  std::unique_ptr<nvinfer1::IExecutionContext>& context = contexts_[static_cast<std::size_t>(profile)];
  if (context == nullptr) {
    // First use: a context of its own, with device memory in stream order (no cudaMalloc here).
    const std::int64_t bytes = engine_->getDeviceMemorySizeForProfileV2(profile);
    TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer memory,
                           cuda::DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 0)), stream));
    clear_last_error();
    std::unique_ptr<nvinfer1::IExecutionContext> made(
        engine_->createExecutionContext(nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED));
    TRTET_CHECK_OR_RETURN(made != nullptr, kInternal, "%s could not create an execution context for profile %d%s",
                          label_.c_str(), profile, last_error_suffix().c_str());
    if (bytes > 0) made->setDeviceMemoryV2(memory.data(), bytes);
    clear_last_error();
    TRTET_CHECK_OR_RETURN(made->setOptimizationProfileAsync(profile, stream), kInternal,
                          "%s could not select optimization profile %d%s", label_.c_str(), profile,
                          last_error_suffix().c_str());
    context = std::move(made);
    context_memory_[static_cast<std::size_t>(profile)] = std::move(memory);
  }
  context_ = context.get();
  active_profile_ = profile;
  return Status::Ok();
}

Status TensorRTEngine::check_index(int index, const char* call, std::optional<bool> want_input) const {
  TRTET_CHECK_OR_RETURN(index >= 0 && index < io_count(), kInvalidArgument, "%s: binding %d is out of range (%d bindings)",
                        call, index, io_count());
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  TRTET_CHECK_OR_RETURN(!want_input.has_value() || *want_input == io.is_input, kInvalidArgument,
                        "%s: binding %d (\"%s\") is an %s", call, index, quoted(io.name).c_str(),
                        io.is_input ? "input" : "output");
  return Status::Ok();
}

Status TensorRTEngine::set_input_shape(int index, const Shape& shape) {
  TRTET_RETURN_IF_ERROR(check_index(index, "set_input_shape", true));
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->setInputShape(io.name.c_str(), dims_from_shape(shape)), kInvalidArgument,
                        "%s rejected shape %s for input %d (\"%s\"; profile %d allows %s..%s)%s",
                        label_.c_str(), shape.to_string().c_str(), index, quoted(io.name).c_str(), active_profile_,
                        input_bounds(active_profile_, index).min.to_string().c_str(),
                        input_bounds(active_profile_, index).max.to_string().c_str(), last_error_suffix().c_str());
  return Status::Ok();
}

Result<int> TensorRTEngine::infer_shapes() {
  clear_last_error();
  const std::int32_t missing = context_->inferShapes(0, nullptr);
  TRTET_CHECK_OR_RETURN(missing >= 0, kInvalidArgument, "%s could not infer output shapes from the input shapes%s",
                        label_.c_str(), last_error_suffix().c_str());
  if (missing > 0) {
    std::vector<const char*> names(static_cast<std::size_t>(missing), nullptr);
    const std::int32_t listed = context_->inferShapes(missing, names.data());
    std::string joined;
    for (std::int32_t i = 0; i < listed && i < missing; ++i) {
      const char* name = names[static_cast<std::size_t>(i)];
      joined += std::string(i > 0 ? ", " : "") + "\"" + (name != nullptr ? quoted(name) : std::string("?")) + "\"";
    }
    return make_error(ErrorCode::kInvalidArgument, "%s: %d input(s) are not sufficiently specified for shape inference: %s",
                      label_.c_str(), static_cast<int>(missing), joined.c_str());
  }
  int unresolved = 0;
  for (const engine::IoDesc& io : io_) {
    if (!io.is_input && !is_concrete(context_->getTensorShape(io.name.c_str()))) ++unresolved;
  }
  return unresolved;
}

Result<Shape> TensorRTEngine::output_shape(int index) const {
  TRTET_RETURN_IF_ERROR(check_index(index, "output_shape", false));
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  const nvinfer1::Dims dims = context_->getTensorShape(io.name.c_str());
  Result<Shape> shape = shape_from_dims(dims);
  if (shape.ok()) return shape;
  return make_error(ErrorCode::kNotSupported, "output %d (\"%s\") has no concrete shape yet: %s", index, quoted(io.name).c_str(),
                    shape.status().message().c_str());
}

Status TensorRTEngine::set_tensor_address(int index, void* address) {
  TRTET_RETURN_IF_ERROR(check_index(index, "set_tensor_address", std::nullopt));
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->setTensorAddress(io.name.c_str(), address), kInvalidArgument,
                        "%s rejected address %p for %s %d (\"%s\"; it must be device-accessible and 256-byte "
                        "aligned)%s",
                        label_.c_str(), address, io.is_input ? "input" : "output", index, quoted(io.name).c_str(), last_error_suffix().c_str());
  return Status::Ok();
}

Status TensorRTEngine::set_aux_streams(cudaStream_t* streams, int count) {
  TRTET_CHECK_OR_RETURN(count >= 0, kInvalidArgument, "set_aux_streams: negative stream count %d", count);
  TRTET_CHECK_OR_RETURN(count == 0 || streams != nullptr, kInvalidArgument,
                        "set_aux_streams: %d streams announced, no array given", count);
  TRTET_CHECK_OR_RETURN(count == 0 || count == aux_stream_count_, kInvalidArgument,
                        "set_aux_streams: %d streams given, the %s engine uses %d auxiliary streams", count,
                        label_.c_str(), aux_stream_count_);
  for (int i = 0; i < count; ++i) {
    TRTET_CHECK_OR_RETURN(!is_default_stream(streams[i]), kInvalidArgument,
                          "set_aux_streams: stream %d is a default stream, which TensorRT cannot use as auxiliary", i);
  }
  aux_streams_.assign(streams, streams + count);
  return Status::Ok();
}

Status TensorRTEngine::enqueue(cudaStream_t stream) {
  // setAuxStreams holds for the next enqueueV3 only: hand the streams over before every one.
  if (!aux_streams_.empty()) context_->setAuxStreams(aux_streams_.data(), static_cast<std::int32_t>(aux_streams_.size()));
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->enqueueV3(stream), kInternal, "%s enqueueV3 failed%s", label_.c_str(),
                        last_error_suffix().c_str());
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
