#include "tensorrt/tensorrt_engine.h"

#include <string>
#include <utility>

#include "common/log.h"
#include "cuda/device.h"
#include "tensorrt/logger.h"
#include "tensorrt/mapping.h"
#include "tensorrt/version.h"
#include "tensorrt/weight_streaming.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

/// Refuses a libnvinfer of another major version, or older than the headers compiled against
/// (its objects would lack interface methods these headers call).
Status check_library_version() {
  const long loaded = getInferLibVersion();
  const long loaded_major = loaded / 10000;
  const long loaded_minor = loaded / 100 % 100;
  TRTET_CHECK_OR_RETURN(loaded_major == NV_TENSORRT_MAJOR && loaded_minor >= NV_TENSORRT_MINOR, kIncompatible,
                        "the loaded libnvinfer is TensorRT %ld.%ld.%ld, but this backend was built against TensorRT "
                        "%d.%d headers: load TensorRT %d.%d or a newer %d.x",
                        loaded_major, loaded_minor, loaded % 100, NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR,
                        NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR, NV_TENSORRT_MAJOR);
  return Status::Ok();
}

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

/// True for handles TensorRT refuses as auxiliary streams: null (legacy default), legacy, per-thread.
bool is_default_stream(cudaStream_t stream) noexcept {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

}  // namespace

Result<std::unique_ptr<TensorRTEngine>> TensorRTEngine::create(const EngineRequest& request) {
  TRTET_CHECK_OR_RETURN(request.engine_bytes != nullptr && request.engine_size > 0, kInvalidProgram,
                        "the blob holds no serialized TensorRT engine (%zu bytes)", request.engine_size);
  TRTET_CHECK_OR_RETURN(request.metadata != nullptr, kInvalidArgument, "the engine request carries no blob metadata");
  TRTET_RETURN_IF_ERROR(cuda::check_device_index(request.device));
  cuda::DeviceGuard device(request.device);
  TRTET_RETURN_IF_ERROR(device.status());
  TRTET_RETURN_IF_ERROR(check_library_version());

  std::unique_ptr<TensorRTEngine> engine(new TensorRTEngine(request.device));
  TRTET_RETURN_IF_ERROR(engine->deserialize(request));
  TRTET_ASSIGN_OR_RETURN(const std::vector<EngineTensor> tensors, read_tensors(*engine->engine_));
  TRTET_ASSIGN_OR_RETURN(engine->io_, bind_by_name(*request.metadata, tensors));
  TRTET_ASSIGN_OR_RETURN(engine->aliases_, map_aliases(*request.metadata, engine->io_, tensors));
  const std::int32_t profiles = engine->engine_->getNbOptimizationProfiles();
  if (profiles > 1) {
    log(LogLevel::kDebug, "TensorRT engine%s%s has %d optimization profiles; profile 0 is used",
        request.method_name != nullptr ? " of method " : "", request.method_name != nullptr ? request.method_name : "",
        static_cast<int>(profiles));
  }
  TRTET_RETURN_IF_ERROR(engine->apply_weight_streaming_budget(request));
  TRTET_RETURN_IF_ERROR(engine->create_context());
  engine->aux_stream_count_ = engine->engine_->getNbAuxStreams();
  return engine;
}

TensorRTEngine::~TensorRTEngine() {
  cuda::DeviceGuard device(device_);  // TensorRT frees device memory in these destructors
  context_.reset();
  engine_.reset();
  runtime_.reset();
}

Status TensorRTEngine::deserialize(const EngineRequest& request) {
  clear_last_error();
  runtime_.reset(nvinfer1::createInferRuntime(logger()));
  TRTET_CHECK_OR_RETURN(runtime_ != nullptr, kInternal, "TensorRT could not create a runtime%s",
                        last_error_suffix().c_str());
  engine_.reset(runtime_->deserializeCudaEngine(request.engine_bytes, request.engine_size));
  TRTET_CHECK_OR_RETURN(engine_ != nullptr, kInvalidProgram,
                        "TensorRT %d.%d could not deserialize the engine (%zu bytes; an engine runs only on the "
                        "TensorRT version and GPU it was built for unless built version- or hardware-compatible)%s",
                        NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR, request.engine_size, last_error_suffix().c_str());
  return Status::Ok();
}

Status TensorRTEngine::apply_weight_streaming_budget(const EngineRequest& request) {
  const std::int64_t streamable = engine_->getStreamableWeightsSize();
  const WeightStreamingPlan plan = plan_weight_streaming(streamable, request.weight_streaming_budget);
  if (plan.ignored) {
    log(LogLevel::kWarning,
        "weight_streaming_budget %llu ignored: the engine was not built for weight streaming (no streamable weights)",
        static_cast<unsigned long long>(*request.weight_streaming_budget));
  }
  if (plan.budget.has_value()) {
    clear_last_error();
    TRTET_CHECK_OR_RETURN(engine_->setWeightStreamingBudgetV2(*plan.budget), kInvalidArgument,
                          "TensorRT rejected weight_streaming_budget %lld (the engine streams up to %lld bytes)%s",
                          static_cast<long long>(*plan.budget), static_cast<long long>(streamable),
                          last_error_suffix().c_str());
  }
  weight_streaming_ = streams_weights(streamable, engine_->getWeightStreamingBudgetV2());
  if (weight_streaming_) {
    log(LogLevel::kInfo, "weight streaming active: %lld of %lld streamable bytes resident; enqueue is synchronous",
        static_cast<long long>(engine_->getWeightStreamingBudgetV2()), static_cast<long long>(streamable));
  }
  return Status::Ok();
}

Status TensorRTEngine::create_context() {
  clear_last_error();
  context_.reset(engine_->createExecutionContext(nvinfer1::ExecutionContextAllocationStrategy::kSTATIC));
  TRTET_CHECK_OR_RETURN(context_ != nullptr, kInternal, "TensorRT could not create an execution context%s",
                        last_error_suffix().c_str());
  return Status::Ok();
}

Status TensorRTEngine::check_index(int index, const char* call, std::optional<bool> want_input) const {
  TRTET_CHECK_OR_RETURN(index >= 0 && index < io_count(), kInvalidArgument, "%s: binding %d is out of range (%d bindings)",
                        call, index, io_count());
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  TRTET_CHECK_OR_RETURN(!want_input.has_value() || *want_input == io.is_input, kInvalidArgument,
                        "%s: binding %d (\"%s\") is an %s", call, index, io.name.c_str(),
                        io.is_input ? "input" : "output");
  return Status::Ok();
}

Status TensorRTEngine::set_input_shape(int index, const Shape& shape) {
  TRTET_RETURN_IF_ERROR(check_index(index, "set_input_shape", true));
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->setInputShape(io.name.c_str(), dims_from_shape(shape)), kInvalidArgument,
                        "TensorRT rejected shape %s for input %d (\"%s\"; profile 0 allows %s..%s)%s",
                        shape.to_string().c_str(), index, io.name.c_str(), io.min_shape.to_string().c_str(),
                        io.max_shape.to_string().c_str(), last_error_suffix().c_str());
  return Status::Ok();
}

Result<int> TensorRTEngine::infer_shapes() {
  clear_last_error();
  const std::int32_t missing = context_->inferShapes(0, nullptr);
  TRTET_CHECK_OR_RETURN(missing >= 0, kInvalidArgument, "TensorRT could not infer output shapes from the input shapes%s",
                        last_error_suffix().c_str());
  if (missing > 0) {
    std::vector<const char*> names(static_cast<std::size_t>(missing), nullptr);
    const std::int32_t listed = context_->inferShapes(missing, names.data());
    std::string joined;
    for (std::int32_t i = 0; i < listed && i < missing; ++i) {
      const char* name = names[static_cast<std::size_t>(i)];
      joined += std::string(i > 0 ? ", " : "") + "\"" + (name != nullptr ? name : "?") + "\"";
    }
    return make_error(ErrorCode::kInvalidArgument, "%d input(s) are not sufficiently specified for shape inference: %s",
                      static_cast<int>(missing), joined.c_str());
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
  return make_error(ErrorCode::kNotSupported, "output %d (\"%s\") has no concrete shape yet: %s", index, io.name.c_str(),
                    shape.status().message().c_str());
}

Status TensorRTEngine::set_tensor_address(int index, void* address) {
  TRTET_RETURN_IF_ERROR(check_index(index, "set_tensor_address", std::nullopt));
  const engine::IoDesc& io = io_[static_cast<std::size_t>(index)];
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->setTensorAddress(io.name.c_str(), address), kInvalidArgument,
                        "TensorRT rejected address %p for %s %d (\"%s\"; it must be device-accessible and 256-byte "
                        "aligned)%s",
                        address, io.is_input ? "input" : "output", index, io.name.c_str(), last_error_suffix().c_str());
  return Status::Ok();
}

Status TensorRTEngine::set_aux_streams(cudaStream_t* streams, int count) {
  TRTET_CHECK_OR_RETURN(count >= 0, kInvalidArgument, "set_aux_streams: negative stream count %d", count);
  TRTET_CHECK_OR_RETURN(count == 0 || streams != nullptr, kInvalidArgument,
                        "set_aux_streams: %d streams announced, no array given", count);
  for (int i = 0; i < count; ++i) {
    TRTET_CHECK_OR_RETURN(!is_default_stream(streams[i]), kInvalidArgument,
                          "set_aux_streams: stream %d is a default stream, which TensorRT cannot use as auxiliary", i);
  }
  context_->setAuxStreams(streams, count);
  return Status::Ok();
}

Status TensorRTEngine::enqueue(cudaStream_t stream) {
  clear_last_error();
  TRTET_CHECK_OR_RETURN(context_->enqueueV3(stream), kInternal, "TensorRT enqueueV3 failed%s",
                        last_error_suffix().c_str());
  return Status::Ok();
}

std::int64_t TensorRTEngine::streamable_weights_size() const noexcept { return engine_->getStreamableWeightsSize(); }

std::int64_t TensorRTEngine::weight_streaming_budget() const noexcept { return engine_->getWeightStreamingBudgetV2(); }

}  // namespace torch_tensorrt::executorch_backend::tensorrt
