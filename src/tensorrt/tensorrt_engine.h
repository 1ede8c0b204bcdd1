// The engine seam over TensorRT: one deserialized ICudaEngine and its execution context.
//
// Note [TensorRT adapter]
// Binding i of the seam is the blob's io_bindings[i], found by name among the engine's I/O tensors
// (mapping.h checks mode, dtype and shape against the blob, with optimization profile 0's bounds).
// Every optimization profile of the engine is served, each by its own execution context (TensorRT:
// each needs its own device memory): profile 0's is made when the engine is, with its memory
// (kSTATIC); another's when the delegate first selects it (select_profile), with device memory
// allocated in stream order on the caller's stream (kUSER_MANAGED, setDeviceMemoryV2) and
// setOptimizationProfileAsync queued there, so a first use never synchronizes the device.
// Each seam call is one call of the selected profile's IExecutionContext:
// set_input_shape → setInputShape, infer_shapes → inferShapes then getTensorShape of the outputs,
// set_tensor_address → setTensorAddress, enqueue → enqueueV3 on the caller's stream. set_aux_streams
// keeps the streams the delegate made on the caller's green context, and enqueue hands them to
// setAuxStreams before every enqueueV3 (TensorRT applies setAuxStreams to the next enqueueV3 only, and
// makes its own streams, outside the green context, for an enqueueV3 without them).
// The runtime library (full, lean or dispatch) is loaded when the engine is created
// (runtime_library.h); the engine holds it until its TensorRT objects are gone.
// Weight streaming: Note [Weight streaming] in weight_streaming.h.
#pragma once

#include <NvInferRuntime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "blob/format.h"
#include "common/status.h"
#include "cuda/device_buffer.h"
#include "engine/engine.h"
#include "engine/engine_factory.h"
#include "tensorrt/runtime_library.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// A TensorRT engine behind the seam. Not thread-safe (the delegate serializes calls); every call
/// after create() runs on the host only except enqueue(), which queues work on the given stream.
class TensorRTEngine final : public engine::Engine {
 public:
  /// Loads the runtime library `request.runtime_library` (else TRTET_TENSORRT_RUNTIME, else the default
  /// order) names, deserializes `request.engine_bytes` on `request.device`, applies the weight-streaming
  /// budget, creates the execution context and matches its I/O tensors to `request.metadata`.
  /// Host code the engine carries is allowed only by `request.allow_engine_host_code` (else
  /// TRTET_ALLOW_ENGINE_HOST_CODE); without it the dispatch runtime is refused, naming the option.
  /// Errors: kNotSupported when no runtime library loads (the message lists what was searched);
  /// kIncompatible when those that load cannot serve the headers built against; kNoDevice without a GPU;
  /// kInvalidArgument for a bad search order, device index or a budget TensorRT rejects;
  /// kInvalidProgram for bytes TensorRT cannot deserialize or I/O that contradicts the blob
  /// (bind_by_name, map_aliases); kNotSupported for I/O the delegate cannot bind; kInternal when
  /// TensorRT fails otherwise (e.g. creating the runtime or the execution context). Every message from
  /// TensorRT's side names the loaded library's version and carries TensorRT's own reason.
  static Result<std::unique_ptr<TensorRTEngine>> create(const EngineRequest& request);

  /// Destroys the context, the engine and the runtime, in that order, on the engine's device. The
  /// caller has waited for the engine's work (the delegate does, by event).
  ~TensorRTEngine() override;
  TensorRTEngine(const TensorRTEngine&) = delete;             // owns TensorRT objects
  TensorRTEngine& operator=(const TensorRTEngine&) = delete;  // likewise
  TensorRTEngine(TensorRTEngine&&) = delete;                  // the delegate holds it by pointer
  TensorRTEngine& operator=(TensorRTEngine&&) = delete;       // likewise

  int io_count() const noexcept override { return static_cast<int>(io_.size()); }
  const engine::IoDesc& io(int index) const noexcept override { return io_[static_cast<std::size_t>(index)]; }
  const std::vector<engine::Alias>& aliases() const noexcept override { return aliases_; }
  int device() const noexcept override { return device_; }

  /// setInputShape; kInvalidArgument for a bad index, an output, or a shape TensorRT rejects.
  Status set_input_shape(int index, const Shape& shape) override;
  /// inferShapes, then counts the outputs whose shape still has a -1 (data-dependent) dimension.
  /// kInvalidArgument when inputs are not sufficiently specified or their shapes are inconsistent.
  Result<int> infer_shapes() override;
  /// getTensorShape of output `index`; kNotSupported while a dimension depends on data.
  Result<Shape> output_shape(int index) const override;
  /// setTensorAddress; kInvalidArgument for a bad index or an address TensorRT rejects.
  Status set_tensor_address(int index, void* address) override;

  /// getNbOptimizationProfiles.
  int profile_count() const noexcept override { return static_cast<int>(profiles_.size()); }
  /// getProfileShape(kMIN/kMAX) of input `index` in `profile`, read when the engine was created.
  engine::ShapeBounds input_bounds(int profile, int index) const override;
  /// Switches to `profile`'s execution context, making it on first use (kUSER_MANAGED, its device
  /// memory from cudaMallocAsync on `stream`, setOptimizationProfileAsync on `stream`).
  /// kInvalidArgument for a profile out of range; kInternal (TensorRT's reason) when TensorRT fails.
  Status select_profile(int profile, cudaStream_t stream) override;
  /// ICudaEngine::getNbAuxStreams.
  int aux_stream_count() const noexcept override { return aux_stream_count_; }
  /// Keeps `streams` for every later enqueue (copied); kInvalidArgument for a negative count, a count
  /// other than aux_stream_count() (0 clears them), or a null, legacy or per-thread default stream
  /// among them (TensorRT requires distinct non-default streams).
  Status set_aux_streams(cudaStream_t* streams, int count) override;

  /// setAuxStreams with the kept streams (when any), then enqueueV3 on `stream`; kInternal (with
  /// TensorRT's reason) when it fails.
  Status enqueue(cudaStream_t stream) override;
  /// True while weight streaming is active (budget below the streamable weights' size).
  bool enqueue_is_synchronous() const noexcept override { return weight_streaming_; }

  /// getStreamableWeightsSize: 0 unless the engine was built for weight streaming.
  std::int64_t streamable_weights_size() const noexcept { return streamable_bytes_; }
  /// getWeightStreamingBudgetV2 after the budget was applied: the budget in effect; nullopt for an
  /// engine without streamable weights (TensorRT is not asked).
  std::optional<std::int64_t> weight_streaming_budget() const noexcept { return budget_; }
  /// The runtime library serving this engine.
  const RuntimeLibrary& runtime_library() const noexcept { return *library_; }
  /// Whether the runtime was allowed to load host code the engine carries (Note [Engine host code]).
  bool host_code_allowed() const noexcept { return host_code_allowed_; }
  /// The engine's runtime (for tests that look past the seam).
  nvinfer1::IRuntime& runtime() const noexcept { return *runtime_; }
  /// The deserialized engine (likewise).
  nvinfer1::ICudaEngine& cuda_engine() const noexcept { return *engine_; }

 private:
  TensorRTEngine(int device, std::shared_ptr<const RuntimeLibrary> library);

  Status deserialize(const EngineRequest& request);
  /// The binding table and aliases (mapping.h); errors name the library's version.
  Status read_bindings(const blob::Metadata& metadata);
  Status apply_weight_streaming_budget(const EngineRequest& request);
  Status create_context();
  /// Every input's bounds in every profile (profiles_), checked against profile 0's ranks.
  Status read_profiles();
  /// Status of binding `index` for a call that needs an input (`want_input`), an output, or either.
  Status check_index(int index, const char* call, std::optional<bool> want_input) const;

  int device_ = 0;
  bool host_code_allowed_ = false;  ///< setEngineHostCodeAllowed's value (Note [Engine host code])
  // Declared so that destruction runs context → engine → runtime → library (the destructor also
  // releases the TensorRT objects explicitly); the library's code runs their destructors.
  std::shared_ptr<const RuntimeLibrary> library_;
  std::string label_;  ///< library_->label(): "TensorRT 11.4.0 (lean runtime)", for messages
  std::unique_ptr<nvinfer1::IRuntime> runtime_;
  std::unique_ptr<nvinfer1::ICudaEngine> engine_;
  /// Per profile: its execution context (null until first selected, but profile 0's) and the device
  /// memory given to it (profiles other than 0). Memory is freed after the contexts, in order on
  /// housekeeping_stream_.
  std::vector<cuda::DeviceBuffer> context_memory_;
  std::vector<std::unique_ptr<nvinfer1::IExecutionContext>> contexts_;
  nvinfer1::IExecutionContext* context_ = nullptr;  ///< the selected profile's
  int active_profile_ = 0;
  cudaStream_t housekeeping_stream_ = nullptr;       ///< frees context memory at destruction
  std::vector<std::vector<engine::ShapeBounds>> profiles_;  ///< [profile][binding]: inputs' bounds
  std::vector<engine::IoDesc> io_;
  std::vector<engine::Alias> aliases_;
  int aux_stream_count_ = 0;
  std::vector<cudaStream_t> aux_streams_;  ///< set_aux_streams', handed over before every enqueueV3
  std::int64_t streamable_bytes_ = 0;
  std::optional<std::int64_t> budget_;
  bool weight_streaming_ = false;
};

}  // namespace torch_tensorrt::executorch_backend::tensorrt
