// The fake's IExecutionContext: shapes checked against profile 0, outputs following their "from"
// input, enqueueV3 running out = in + 1 on the caller's stream and a kernel on each auxiliary stream
// set since the previous enqueueV3.
#include <new>

#include "fake/fake_kernels.h"
#include "fake/fake_tensorrt.h"

namespace trtet_fake {
namespace {

bool is_default_stream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

}  // namespace

Context::Context(Engine& engine, nvinfer1::ExecutionContextAllocationStrategy)
    : engine_(engine), impl_(this, engine) {
  mImpl = &impl_;
  ++engine_.impl().live_contexts;
  count(stats().contexts_created);
}

Context::~Context() noexcept {
  --engine_.impl().live_contexts;
  count(stats().contexts_destroyed);
}

ContextImpl::ContextImpl(nvinfer1::IExecutionContext* owner, Engine& engine)
    : owner_(owner), engine_(engine), plan_(engine.impl().plan()) {
  // TensorRT's context allocates as it is made; the fake's allocations are its events.
  created = cudaEventCreateWithFlags(&start_, cudaEventDisableTiming);
  aux_done_.resize(static_cast<std::size_t>(plan_.aux_streams), nullptr);
  for (cudaEvent_t& event : aux_done_) {
    if (created == cudaSuccess) created = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  }
}

ContextImpl::~ContextImpl() noexcept {
  if (start_ != nullptr) cudaEventDestroy(start_);
  for (cudaEvent_t event : aux_done_) {
    if (event != nullptr) cudaEventDestroy(event);
  }
}

bool ContextImpl::fail(const std::string& message) const {
  log_error(engine_.impl().logger(), message);
  return false;
}

bool ContextImpl::allInputDimensionsSpecified() const noexcept {
  for (const Tensor& tensor : plan_.tensors) {
    if (tensor.mode == nvinfer1::TensorIOMode::kINPUT && volume(shape_of(tensor)) == 0 &&
        input_shapes_.count(tensor.name) == 0) {
      return false;
    }
  }
  return true;
}

bool ContextImpl::setInputShape(char const* tensorName, nvinfer1::Dims const& dims) noexcept {
  count(stats().set_input_shape_calls);
  const Tensor* tensor = plan_.find(tensorName);
  if (tensor == nullptr || tensor->mode != nvinfer1::TensorIOMode::kINPUT) {
    return fail(std::string("setInputShape: \"") + (tensorName != nullptr ? tensorName : "") + "\" is no input");
  }
  if (plan_.fails("set_input_shape")) return fail("setInputShape: injected failure");
  if (hook_fails("setInputShape")) return fail("setInputShape: injected fault");
  if (dims.nbDims != tensor->shape.nbDims) {
    return fail("setInputShape: " + tensor->name + " has rank " + std::to_string(tensor->shape.nbDims) + ", not " +
                std::to_string(dims.nbDims));
  }
  const nvinfer1::Dims min = tensor->profile_min(profile_);
  const nvinfer1::Dims max = tensor->profile_max(profile_);
  for (std::int32_t i = 0; i < dims.nbDims; ++i) {
    const std::int64_t low = min.nbDims > 0 ? min.d[i] : tensor->shape.d[i];
    const std::int64_t high = max.nbDims > 0 ? max.d[i] : tensor->shape.d[i];
    if (dims.d[i] < low || dims.d[i] > high) {
      return fail("setInputShape: " + to_text(dims) + " is outside profile " + std::to_string(profile_) + " of " +
                  tensor->name + " (" + to_text(min) + ".." + to_text(max) + ")");
    }
  }
  input_shapes_[tensor->name] = dims;
  return true;
}

bool ContextImpl::setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept {
  if (profileIndex < 0 || profileIndex >= plan_.profiles) {
    return fail("setOptimizationProfileAsync: profile " + std::to_string(profileIndex) + " of " +
                std::to_string(plan_.profiles));
  }
  profile_ = profileIndex;
  input_shapes_.clear();  // TensorRT: shapes are set anew after a profile switch
  count(stats().profile_selections);
  stats().last_profile_selected = profileIndex;
  stats().last_profile_stream = stream;
  return true;
}

void ContextImpl::setDeviceMemoryV2(void* memory, int64_t size) noexcept {
  if (memory == nullptr && size > 0) {
    fail("setDeviceMemoryV2: null memory for " + std::to_string(size) + " bytes");
    return;
  }
  stats().device_memory_set = size;
}

nvinfer1::Dims ContextImpl::shape_of(const Tensor& tensor) const {
  if (tensor.mode == nvinfer1::TensorIOMode::kINPUT) {
    auto found = input_shapes_.find(tensor.name);
    return found != input_shapes_.end() ? found->second : tensor.shape;
  }
  nvinfer1::Dims dims = tensor.shape;
  if (tensor.data_dependent || tensor.from.empty()) return dims;
  const Tensor* source = plan_.find(tensor.from.c_str());
  if (source == nullptr) return dims;
  const nvinfer1::Dims input = shape_of(*source);
  for (std::int32_t i = 0; i < dims.nbDims && i < input.nbDims; ++i) {
    if (dims.d[i] < 0) dims.d[i] = input.d[i];
  }
  return dims;
}

nvinfer1::Dims ContextImpl::getTensorShape(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  if (tensor == nullptr) {
    nvinfer1::Dims dims{};
    dims.nbDims = -1;
    return dims;
  }
  return shape_of(*tensor);
}

bool ContextImpl::setTensorAddress(char const* tensorName, void* data) noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  if (tensor == nullptr) return fail(std::string("setTensorAddress: no tensor \"") + (tensorName ? tensorName : "") + "\"");
  if (plan_.fails("set_address")) return fail("setTensorAddress: injected failure");
  if (hook_fails("setTensorAddress")) return fail("setTensorAddress: injected fault");
  if (reinterpret_cast<std::uintptr_t>(data) % 256 != 0) {
    return fail("setTensorAddress: " + tensor->name + "'s address is not 256-byte aligned");
  }
  addresses_[tensor->name] = data;
  return true;
}

void const* ContextImpl::getTensorAddress(char const* tensorName) const noexcept {
  auto found = addresses_.find(tensorName != nullptr ? tensorName : "");
  return found != addresses_.end() ? found->second : nullptr;
}

int32_t ContextImpl::inferShapes(int32_t nbMaxNames, char const** tensorNames) noexcept {
  count(stats().infer_shapes_calls);
  if (plan_.fails("infer_shapes")) {
    fail("inferShapes: injected failure");
    return -1;
  }
  if (hook_fails("inferShapes")) {
    fail("inferShapes: injected fault");
    return -1;
  }
  int32_t missing = 0;
  for (const Tensor& tensor : plan_.tensors) {
    if (tensor.mode != nvinfer1::TensorIOMode::kINPUT) continue;
    bool dynamic = false;
    for (std::int32_t i = 0; i < tensor.shape.nbDims; ++i) dynamic = dynamic || tensor.shape.d[i] < 0;
    if (dynamic && input_shapes_.count(tensor.name) == 0) {
      if (missing < nbMaxNames && tensorNames != nullptr) tensorNames[missing] = tensor.name.c_str();
      ++missing;
    }
  }
  return missing;
}

void ContextImpl::setAuxStreams(cudaStream_t* auxStreams, int32_t nbStreams) noexcept {
  aux_streams_.assign(auxStreams, auxStreams + (nbStreams > 0 ? nbStreams : 0));
  aux_streams_set_ = true;
}

bool ContextImpl::enqueueV3(cudaStream_t stream) noexcept {
  TrtetFakeStats& counts = stats();
  count(counts.enqueues);
  counts.last_enqueue_stream = stream;
  if (is_default_stream(stream)) count(counts.enqueues_on_default_stream);
  // setAuxStreams applies to this enqueueV3 only.
  const bool aux_set = aux_streams_set_;
  std::vector<cudaStream_t> aux = std::move(aux_streams_);
  aux_streams_.clear();
  aux_streams_set_ = false;
  if (plan_.aux_streams > 0) {
    if (aux_set && static_cast<int>(aux.size()) >= plan_.aux_streams) {
      count(counts.enqueues_with_aux_streams);
    } else {
      count(counts.enqueues_without_aux_streams);  // TensorRT would make streams of its own here
      aux.clear();
    }
  }
  counts.last_aux_stream_count = static_cast<int>(aux.size());
  for (std::size_t i = 0; i < aux.size() && i < 8; ++i) counts.last_aux_streams[i] = aux[i];
  if (!run(stream, aux)) {
    count(counts.enqueues_failed);
    return false;
  }
  return true;
}

bool ContextImpl::run(cudaStream_t stream, const std::vector<cudaStream_t>& aux) {
  if (plan_.fails("enqueue")) return fail("enqueueV3: injected failure");
  if (hook_fails("enqueueV3")) return fail("enqueueV3: injected fault");
  for (const Tensor& tensor : plan_.tensors) {
    if (addresses_.count(tensor.name) == 0) return fail("enqueueV3: no address set for " + tensor.name);
    if (volume(shape_of(tensor)) == 0 && !tensor.data_dependent && tensor.shape.nbDims > 0) {
      return fail("enqueueV3: the shape of " + tensor.name + " is not specified");
    }
  }
  for (const Tensor& tensor : plan_.tensors) {
    if (tensor.mode != nvinfer1::TensorIOMode::kOUTPUT || tensor.from.empty()) continue;
    const Tensor* source = plan_.find(tensor.from.c_str());
    if (source == nullptr || tensor.dtype != nvinfer1::DataType::kFLOAT) continue;
    const cudaError_t launched = launch_add_one(static_cast<const float*>(addresses_[source->name]),
                                                static_cast<float*>(addresses_[tensor.name]), volume(shape_of(*source)),
                                                stream);
    if (launched != cudaSuccess) return fail(std::string("enqueueV3: kernel launch failed: ") + cudaGetErrorString(launched));
  }
  if (!aux.empty()) {
    const cudaError_t recorded = cudaEventRecord(start_, stream);
    if (recorded != cudaSuccess) return fail(std::string("enqueueV3: cudaEventRecord failed: ") + cudaGetErrorString(recorded));
    for (std::size_t i = 0; i < aux.size() && i < aux_done_.size(); ++i) {
      cudaStream_t aux_stream = aux[i];
      cudaError_t error = cudaStreamWaitEvent(aux_stream, start_, 0);
      if (error == cudaSuccess) error = launch_touch(aux_stream);
      if (error == cudaSuccess) error = cudaEventRecord(aux_done_[i], aux_stream);
      if (error == cudaSuccess) error = cudaStreamWaitEvent(stream, aux_done_[i], 0);
      if (error != cudaSuccess) {
        return fail("enqueueV3: work on auxiliary stream " + std::to_string(i) + " failed: " + cudaGetErrorString(error));
      }
    }
  }
  const EngineImpl& engine = engine_.impl();
  if (plan_.streamable_bytes > 0 && engine.budget() < plan_.streamable_bytes) {
    // Weight streaming: TensorRT's enqueueV3 returns when the work is done.
    const cudaError_t synced = cudaStreamSynchronize(stream);
    if (synced != cudaSuccess) return fail(std::string("enqueueV3: weight streaming sync failed: ") + cudaGetErrorString(synced));
  }
  return true;
}

}  // namespace trtet_fake
