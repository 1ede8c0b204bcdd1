// The test-only TensorRT: nvinfer1::IRuntime, ICudaEngine and IExecutionContext implemented over the
// public headers' implementation interfaces (nvinfer1::apiv::V*), the way a TensorRT library
// implements them, so the adapter's inline TensorRT calls reach this code. Built only for the tests,
// as libtrtet_fake_nvinfer.so (a name no TensorRT library has: it never shadows a real one; tests
// load it by path). It follows the TensorRT behaviour the adapter relies on: setAuxStreams holds for
// the next enqueueV3 only; the weight-streaming budget cannot change while a context exists; errors
// are logged to the runtime's ILogger before a call fails.
#pragma once

#include <NvInferRuntime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fake/fake_plan.h"
#include "fake/fake_stats.h"

namespace trtet_fake {

/// Logs an error (kERROR) to `logger` with the fake's prefix.
void log_error(nvinfer1::ILogger* logger, const std::string& message);

/// Whether the fault hook (trtet_fake_set_fault_hook, fake_stats.h) fails the call `api` (a TensorRT
/// call's name: "deserializeCudaEngine", "enqueueV3", ...); false when no hook is set.
bool hook_fails(const char* api);

class Engine;

class RuntimeImpl final : public nvinfer1::apiv::VRuntime {
 public:
  RuntimeImpl(nvinfer1::IRuntime* owner, nvinfer1::ILogger* logger) : owner_(owner), logger_(logger) {}
  nvinfer1::IRuntime* getPImpl() noexcept override { return owner_; }
  nvinfer1::ICudaEngine* deserializeCudaEngine(void const* blob, std::size_t size) noexcept override;
  void setDLACore(int32_t) noexcept override {}
  int32_t getDLACore() const noexcept override { return -1; }
  int32_t getNbDLACores() const noexcept override { return 0; }
  void setGpuAllocator(nvinfer1::IGpuAllocator*) noexcept override {}
  void setErrorRecorder(nvinfer1::IErrorRecorder*) noexcept override {}
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override { return nullptr; }
  nvinfer1::ILogger* getLogger() const noexcept override { return logger_; }
  bool setMaxThreads(int32_t) noexcept override { return true; }
  int32_t getMaxThreads() const noexcept override { return 1; }
  void setTemporaryDirectory(char const*) noexcept override {}
  char const* getTemporaryDirectory() const noexcept override { return nullptr; }
  void setTempfileControlFlags(nvinfer1::TempfileControlFlags) noexcept override {}
  nvinfer1::TempfileControlFlags getTempfileControlFlags() const noexcept override { return 0; }
  nvinfer1::IPluginRegistry& getPluginRegistry() noexcept override;
  void setPluginRegistryParent(nvinfer1::IPluginRegistry*) noexcept override {}
  nvinfer1::IRuntime* loadRuntime(char const*) noexcept override { return nullptr; }
  void setEngineHostCodeAllowed(bool allowed) noexcept override;
  bool getEngineHostCodeAllowed() const noexcept override { return host_code_allowed_; }
  nvinfer1::ICudaEngine* deserializeCudaEngineV2(nvinfer1::IStreamReaderV2&) noexcept override { return nullptr; }

 private:
  nvinfer1::IRuntime* owner_;
  nvinfer1::ILogger* logger_;
  bool host_code_allowed_ = false;
};

class Runtime final : public nvinfer1::IRuntime {
 public:
  explicit Runtime(nvinfer1::ILogger* logger);
  ~Runtime() noexcept override;

 private:
  RuntimeImpl impl_;
};

class EngineImpl final : public nvinfer1::apiv::VCudaEngine {
 public:
  EngineImpl(nvinfer1::ICudaEngine* owner, nvinfer1::ILogger* logger, Plan plan)
      : owner_(owner), logger_(logger), plan_(std::move(plan)), budget_(plan_.streamable_bytes) {}
  const Plan& plan() const { return plan_; }
  nvinfer1::ILogger* logger() const { return logger_; }
  int live_contexts = 0;

  nvinfer1::ICudaEngine* getPImpl() noexcept override { return owner_; }
  int32_t getNbLayers() const noexcept override { return 1; }
  nvinfer1::IHostMemory* serialize() const noexcept override { return nullptr; }
  nvinfer1::IExecutionContext* createExecutionContext(nvinfer1::ExecutionContextAllocationStrategy strategy) noexcept override;
  bool isRefittable() const noexcept override { return false; }
  char const* getName() const noexcept override { return "fake"; }
  int32_t getNbOptimizationProfiles() const noexcept override { return plan_.profiles; }
  nvinfer1::EngineCapability getEngineCapability() const noexcept override { return nvinfer1::EngineCapability::kSTANDARD; }
  void setErrorRecorder(nvinfer1::IErrorRecorder*) noexcept override {}
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override { return nullptr; }
  nvinfer1::TacticSources getTacticSources() const noexcept override { return 0; }
  nvinfer1::ProfilingVerbosity getProfilingVerbosity() const noexcept override { return nvinfer1::ProfilingVerbosity::kNONE; }
  nvinfer1::IEngineInspector* createEngineInspector() const noexcept override { return nullptr; }
  nvinfer1::Dims getTensorShape(char const* tensorName) const noexcept override;
  nvinfer1::DataType getTensorDataType(char const* tensorName) const noexcept override;
  nvinfer1::TensorLocation getTensorLocation(char const* tensorName) const noexcept override;
  bool isShapeInferenceIO(char const* tensorName) const noexcept override;
  nvinfer1::TensorIOMode getTensorIOMode(char const* tensorName) const noexcept override;
  int32_t getTensorBytesPerComponent(char const*) const noexcept override { return 4; }
  int32_t getTensorComponentsPerElement(char const*) const noexcept override { return 1; }
  nvinfer1::TensorFormat getTensorFormat(char const* tensorName) const noexcept override;
  char const* getTensorFormatDesc(char const*) const noexcept override { return "linear"; }
  int32_t getTensorVectorizedDim(char const*) const noexcept override { return -1; }
  nvinfer1::Dims getProfileShape(char const* tensorName, int32_t profileIndex,
                                 nvinfer1::OptProfileSelector select) const noexcept override;
  int32_t getNbIOTensors() const noexcept override { return static_cast<int32_t>(plan_.tensors.size()); }
  char const* getIOTensorName(int32_t index) const noexcept override;
  nvinfer1::HardwareCompatibilityLevel getHardwareCompatibilityLevel() const noexcept override {
    return static_cast<nvinfer1::HardwareCompatibilityLevel>(0);  // kNONE (NvInfer.h)
  }
  int32_t getNbAuxStreams() const noexcept override { return plan_.aux_streams; }
  int32_t getTensorBytesPerComponentV2(char const*, int32_t) const noexcept override { return 4; }
  int32_t getTensorComponentsPerElementV2(char const*, int32_t) const noexcept override { return 1; }
  nvinfer1::TensorFormat getTensorFormatV2(char const* tensorName, int32_t) const noexcept override {
    return getTensorFormat(tensorName);
  }
  char const* getTensorFormatDescV2(char const*, int32_t) const noexcept override { return "linear"; }
  int32_t getTensorVectorizedDimV2(char const*, int32_t) const noexcept override { return -1; }
  nvinfer1::ISerializationConfig* createSerializationConfig() noexcept override { return nullptr; }
  nvinfer1::IHostMemory* serializeWithConfig(nvinfer1::ISerializationConfig&) const noexcept override { return nullptr; }
  nvinfer1::IRefitter* createRefitter(nvinfer1::ILogger&) noexcept override { return nullptr; }
  int64_t getStreamableWeightsSize() const noexcept override { return plan_.streamable_bytes; }
  bool isDebugTensor(char const*) const noexcept override { return false; }
  bool setWeightStreamingBudgetV2(int64_t gpuMemoryBudget) noexcept override;
  int64_t getWeightStreamingBudgetV2() const noexcept override;
  int64_t getWeightStreamingAutomaticBudget() const noexcept override;
  int64_t getWeightStreamingScratchMemorySize() const noexcept override { return 0; }
  int64_t getDeviceMemorySizeV2() const noexcept override { return 0; }
  /// 64 KiB per profile index + 1, so the adapter's memory for a profile's context is exercised.
  int64_t getDeviceMemorySizeForProfileV2(int32_t profile) const noexcept override { return 65536 * (profile + 1); }
  int64_t const* getProfileTensorValuesV2(char const*, int32_t, nvinfer1::OptProfileSelector) const noexcept override {
    return nullptr;
  }
  nvinfer1::IExecutionContext* createExecutionContextWithRuntimeConfig(nvinfer1::IRuntimeConfig*) noexcept override {
    return nullptr;
  }
  nvinfer1::IRuntimeConfig* createRuntimeConfig() noexcept override { return nullptr; }
  int64_t getEngineStat(nvinfer1::EngineStat) const noexcept override { return -1; }
  char const* getAliasedInputTensor(char const* tensorName) const noexcept override;

  int64_t budget() const { return budget_; }

 private:
  nvinfer1::ICudaEngine* owner_;
  nvinfer1::ILogger* logger_;
  Plan plan_;
  int64_t budget_;
};

class Engine final : public nvinfer1::ICudaEngine {
 public:
  Engine(nvinfer1::ILogger* logger, Plan plan);
  ~Engine() noexcept override;
  EngineImpl& impl() { return impl_; }

 private:
  EngineImpl impl_;
};

class ContextImpl final : public nvinfer1::apiv::VExecutionContext {
 public:
  ContextImpl(nvinfer1::IExecutionContext* owner, Engine& engine);
  ~ContextImpl() noexcept override;
  nvinfer1::IExecutionContext* getPImpl() noexcept override { return owner_; }
  void setDebugSync(bool) noexcept override {}
  bool getDebugSync() const noexcept override { return false; }
  void setProfiler(nvinfer1::IProfiler*) noexcept override {}
  nvinfer1::IProfiler* getProfiler() const noexcept override { return nullptr; }
  nvinfer1::ICudaEngine const& getEngine() const noexcept override { return engine_; }
  void setName(char const*) noexcept override {}
  char const* getName() const noexcept override { return "fake"; }
  void setDeviceMemory(void*) noexcept override {}
  int32_t getOptimizationProfile() const noexcept override { return profile_; }
  bool allInputDimensionsSpecified() const noexcept override;
  void setErrorRecorder(nvinfer1::IErrorRecorder*) noexcept override {}
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override { return nullptr; }
  bool executeV2(void* const*) noexcept override { return false; }
  /// Valid indices select the profile whose bounds setInputShape checks.
  bool setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept override;
  void setEnqueueEmitsProfile(bool) noexcept override {}
  bool getEnqueueEmitsProfile() const noexcept override { return false; }
  bool reportToProfiler() const noexcept override { return false; }
  bool setInputShape(char const* tensorName, nvinfer1::Dims const& dims) noexcept override;
  nvinfer1::Dims getTensorShape(char const* tensorName) const noexcept override;
  nvinfer1::Dims getTensorStrides(char const*) const noexcept override { return nvinfer1::Dims{}; }
  bool setTensorAddress(char const* tensorName, void* data) noexcept override;
  void const* getTensorAddress(char const* tensorName) const noexcept override;
  bool setInputTensorAddress(char const* tensorName, void const* data) noexcept override {
    return setTensorAddress(tensorName, const_cast<void*>(data));
  }
  bool setOutputTensorAddress(char const* tensorName, void* data) noexcept override {
    return setTensorAddress(tensorName, data);
  }
  int32_t inferShapes(int32_t nbMaxNames, char const** tensorNames) noexcept override;
  bool setInputConsumedEvent(cudaEvent_t) noexcept override { return true; }
  cudaEvent_t getInputConsumedEvent() const noexcept override { return nullptr; }
  void* getOutputTensorAddress(char const* tensorName) const noexcept override {
    return const_cast<void*>(getTensorAddress(tensorName));
  }
  bool setOutputAllocator(char const*, nvinfer1::IOutputAllocator*) noexcept override { return false; }
  nvinfer1::IOutputAllocator* getOutputAllocator(char const*) noexcept override { return nullptr; }
  int64_t getMaxOutputSize(char const*) const noexcept override { return 0; }
  bool setTemporaryStorageAllocator(nvinfer1::IGpuAllocator*) noexcept override { return false; }
  nvinfer1::IGpuAllocator* getTemporaryStorageAllocator() const noexcept override { return nullptr; }
  bool enqueueV3(cudaStream_t stream) noexcept override;
  void setPersistentCacheLimit(size_t) noexcept override {}
  size_t getPersistentCacheLimit() const noexcept override { return 0; }
  bool setNvtxVerbosity(nvinfer1::ProfilingVerbosity) noexcept override { return true; }
  nvinfer1::ProfilingVerbosity getNvtxVerbosity() const noexcept override { return nvinfer1::ProfilingVerbosity::kNONE; }
  void setAuxStreams(cudaStream_t* auxStreams, int32_t nbStreams) noexcept override;
  bool setDebugListener(nvinfer1::IDebugListener*) noexcept override { return false; }
  nvinfer1::IDebugListener* getDebugListener() noexcept override { return nullptr; }
  bool setTensorDebugState(char const*, bool) noexcept override { return false; }
  bool getDebugState(char const*) const noexcept override { return false; }
  bool setAllTensorsDebugState(bool) noexcept override { return false; }
  size_t updateDeviceMemorySizeForShapes() noexcept override { return 0; }
  /// Records the memory; a null pointer for a non-zero size is an error (as TensorRT).
  void setDeviceMemoryV2(void* memory, int64_t size) noexcept override;
  nvinfer1::IRuntimeConfig* getRuntimeConfig() const noexcept override { return nullptr; }
  bool setUnfusedTensorsDebugState(bool) noexcept override { return false; }
  bool getUnfusedTensorsDebugState() const noexcept override { return false; }
  bool setCommunicator(void*) noexcept override { return false; }

 private:
  bool fail(const std::string& message) const;
  /// The run-time shape of `tensor`: a set input shape, or an output's shape from its "from" input.
  nvinfer1::Dims shape_of(const Tensor& tensor) const;
  bool run(cudaStream_t stream, const std::vector<cudaStream_t>& aux);

  nvinfer1::IExecutionContext* owner_;
  Engine& engine_;
  const Plan& plan_;
  std::map<std::string, nvinfer1::Dims> input_shapes_;
  int profile_ = 0;
  std::map<std::string, void*> addresses_;
  std::vector<cudaStream_t> aux_streams_;  ///< set since the last enqueueV3
  bool aux_streams_set_ = false;
  cudaEvent_t start_ = nullptr;          ///< main stream → auxiliary streams
  std::vector<cudaEvent_t> aux_done_;   ///< auxiliary streams → main stream

 public:
  /// cudaSuccess, or the error of the first event creation that failed (the context is then unusable).
  cudaError_t created = cudaSuccess;
};

class Context final : public nvinfer1::IExecutionContext {
 public:
  Context(Engine& engine, nvinfer1::ExecutionContextAllocationStrategy strategy);
  ~Context() noexcept override;
  const ContextImpl& impl() const { return impl_; }

 private:
  Engine& engine_;
  ContextImpl impl_;
};

/// The fake library's stats (fake_runtime.cpp).
TrtetFakeStats& stats();

/// Adds one to a stats counter; atomic, since engines run on several threads at once.
inline void count(int& counter) { __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED); }


}  // namespace trtet_fake
