// The fake's ICudaEngine: answers from its plan; weight-streaming calls count when the engine has
// no streamable weights (the adapter must not make them), and the budget is fixed once a context exists.
#include <cuda_runtime_api.h>

#include <new>
#include <string>

#include "fake/fake_tensorrt.h"

namespace trtet_fake {
namespace {

nvinfer1::Dims unknown_dims() {
  nvinfer1::Dims dims{};
  dims.nbDims = -1;
  return dims;
}

}  // namespace

Engine::Engine(nvinfer1::ILogger* logger, Plan plan) : impl_(this, logger, std::move(plan)) {
  mImpl = &impl_;
  count(stats().engines_created);
}

Engine::~Engine() noexcept { count(stats().engines_destroyed); }

nvinfer1::IExecutionContext* EngineImpl::createExecutionContext(
    nvinfer1::ExecutionContextAllocationStrategy strategy) noexcept {
  stats().last_allocation_strategy = static_cast<int>(strategy);
  if (plan_.fails("create_context")) {
    log_error(logger_, "createExecutionContext: injected failure (out of device memory)");
    return nullptr;
  }
  if (hook_fails("createExecutionContext")) {
    log_error(logger_, "createExecutionContext: injected fault");
    return nullptr;
  }
  auto* context = new (std::nothrow) Context(*static_cast<Engine*>(owner_), strategy);
  if (context != nullptr && context->impl().created != cudaSuccess) {
    log_error(logger_, std::string("createExecutionContext: cudaEventCreateWithFlags failed: ") +
                           cudaGetErrorString(context->impl().created));
    delete context;
    return nullptr;
  }
  return context;
}

nvinfer1::Dims EngineImpl::getTensorShape(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr ? tensor->shape : unknown_dims();
}

nvinfer1::DataType EngineImpl::getTensorDataType(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr ? tensor->dtype : nvinfer1::DataType::kFLOAT;
}

nvinfer1::TensorLocation EngineImpl::getTensorLocation(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr ? tensor->location : nvinfer1::TensorLocation::kDEVICE;
}

bool EngineImpl::isShapeInferenceIO(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr && tensor->shape_tensor;
}

nvinfer1::TensorIOMode EngineImpl::getTensorIOMode(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr ? tensor->mode : nvinfer1::TensorIOMode::kNONE;
}

nvinfer1::TensorFormat EngineImpl::getTensorFormat(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  return tensor != nullptr ? tensor->format : nvinfer1::TensorFormat::kLINEAR;
}

nvinfer1::Dims EngineImpl::getProfileShape(char const* tensorName, int32_t profileIndex,
                                           nvinfer1::OptProfileSelector select) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  if (tensor == nullptr || profileIndex < 0 || profileIndex >= plan_.profiles ||
      tensor->mode != nvinfer1::TensorIOMode::kINPUT) {
    return unknown_dims();
  }
  if (tensor->min.nbDims < 0) return unknown_dims();
  switch (select) {
    case nvinfer1::OptProfileSelector::kMIN: return tensor->profile_min(profileIndex);
    case nvinfer1::OptProfileSelector::kOPT: return tensor->profile_max(profileIndex);
    case nvinfer1::OptProfileSelector::kMAX: return tensor->profile_max(profileIndex);
  }
  return unknown_dims();
}

char const* EngineImpl::getIOTensorName(int32_t index) const noexcept {
  if (index < 0 || index >= getNbIOTensors()) return nullptr;
  return plan_.tensors[static_cast<std::size_t>(index)].name.c_str();
}

bool EngineImpl::setWeightStreamingBudgetV2(int64_t gpuMemoryBudget) noexcept {
  if (plan_.streamable_bytes <= 0) {
    count(stats().weight_streaming_calls_without_streamable_weights);
    log_error(logger_, "setWeightStreamingBudgetV2: the engine was not built with kWEIGHT_STREAMING");
    return false;
  }
  if (live_contexts > 0) {
    log_error(logger_, "setWeightStreamingBudgetV2: the budget cannot change while an execution context exists");
    return false;
  }
  if (plan_.fails("set_budget") || gpuMemoryBudget < 0) {
    log_error(logger_, "setWeightStreamingBudgetV2: budget " + std::to_string(gpuMemoryBudget) + " refused");
    return false;
  }
  count(stats().budget_sets);
  stats().last_budget_set = gpuMemoryBudget;
  budget_ = gpuMemoryBudget;
  return true;
}

int64_t EngineImpl::getWeightStreamingBudgetV2() const noexcept {
  if (plan_.streamable_bytes <= 0) count(stats().weight_streaming_calls_without_streamable_weights);
  return budget_;
}

int64_t EngineImpl::getWeightStreamingAutomaticBudget() const noexcept {
  if (plan_.streamable_bytes <= 0) count(stats().weight_streaming_calls_without_streamable_weights);
  count(stats().automatic_budget_queries);
  return plan_.automatic_budget;
}

char const* EngineImpl::getAliasedInputTensor(char const* tensorName) const noexcept {
  const Tensor* tensor = plan_.find(tensorName);
  if (tensor == nullptr || tensor->aliased_input.empty()) return nullptr;
  return tensor->aliased_input.c_str();
}

}  // namespace trtet_fake
