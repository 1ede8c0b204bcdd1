// The engine seam: what the delegate needs from an inference engine.
//
// Shaped after the subset of TensorRT's IExecutionContext the delegate uses (setInputShape,
// inferShapes, getTensorShape, setTensorAddress, setAuxStreams, enqueueV3), so the TensorRT
// adapter is a thin translation; tests implement it with CUDA kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/types.h"

namespace torch_tensorrt::executorch_backend::engine {

/// One input or output binding. Indices of the seam are binding indices: inputs and outputs in
/// the order the runtime passes arguments (the blob's io_bindings order).
struct IoDesc {
  std::string name;
  bool is_input = false;
  DataType dtype = DataType::kFloat32;
  /// Inputs: optimization profile 0's bounds, same rank; a fixed dimension has min == max (other
  /// profiles: Engine::input_bounds).
  /// Outputs: rank only matters (dims may be -1 where data-dependent); unused for checks.
  Shape min_shape;
  Shape max_shape;
};

/// An input's bounds in one optimization profile: every dimension d lies in [min[d], max[d]].
struct ShapeBounds {
  Shape min;
  Shape max;
};

/// How an output aliases an input (from the blob's aliased_io).
enum class AliasKind { kKvCacheUpdate, kUser };

/// Output `output` is written in place into input `input`'s memory.
struct Alias {
  int output = -1;
  int input = -1;
  AliasKind kind = AliasKind::kKvCacheUpdate;
};

/// An inference engine's execution context. Not thread-safe: the delegate serializes calls.
class Engine {
 public:
  virtual ~Engine() = default;

  /// Number of bindings (inputs and outputs).
  virtual int io_count() const noexcept = 0;
  /// Binding `index` (0 <= index < io_count()).
  virtual const IoDesc& io(int index) const noexcept = 0;
  /// Outputs that alias inputs; empty for most engines.
  virtual const std::vector<Alias>& aliases() const noexcept = 0;
  /// The CUDA device the engine was deserialized on.
  virtual int device() const noexcept = 0;

  /// Sets input `index`'s runtime shape (within the profile; the delegate checks bounds first).
  virtual Status set_input_shape(int index, const Shape& shape) = 0;
  /// Propagates input shapes to outputs. Returns the number of outputs whose shape stayed
  /// unresolved (data-dependent): 0 when every output shape is known.
  virtual Result<int> infer_shapes() = 0;
  /// Output `index`'s shape after infer_shapes().
  virtual Result<Shape> output_shape(int index) const = 0;
  /// Binds binding `index` to `address` (device-accessible, 256-byte aligned or a dedicated allocation).
  virtual Status set_tensor_address(int index, void* address) = 0;

  /// Optimization profiles: sets of input bounds, each served by the engine (TensorRT: one execution
  /// context per profile). Profile 0's bounds are io(i).min_shape/max_shape; every profile has the
  /// same ranks. A new engine has profile 0 selected.
  virtual int profile_count() const noexcept { return 1; }
  /// Input `index`'s bounds in `profile` (0 <= profile < profile_count()).
  virtual ShapeBounds input_bounds(int profile, int index) const {
    (void)profile;
    return ShapeBounds{io(index).min_shape, io(index).max_shape};
  }
  /// Makes `profile` the one later shapes, addresses and enqueues use. Device work it needs (a
  /// context's first use: its device memory, TensorRT's setOptimizationProfileAsync) is queued on
  /// `stream`, stream-ordered, never synchronizing the device. A profile's first selection may
  /// allocate: the delegate refuses it while the stream is capturing.
  virtual Status select_profile(int profile, cudaStream_t stream) {
    (void)stream;
    return profile == 0 ? Status::Ok()
                        : make_error(ErrorCode::kInvalidArgument, "engine has 1 optimization profile, not %d", profile + 1);
  }

  /// Number of auxiliary streams the engine wants for parallel work (0: none).
  virtual int aux_stream_count() const noexcept { return 0; }
  /// Hands the engine its auxiliary streams (made by the delegate on the caller's green context
  /// or device). Called before enqueue whenever the stream set changes.
  virtual Status set_aux_streams(cudaStream_t* streams, int count) {
    (void)streams;
    return count == 0 ? Status::Ok() : make_error(ErrorCode::kNotSupported, "engine takes no auxiliary streams");
  }

  /// Enqueues inference on `stream` with the bound shapes and addresses. Must not synchronize
  /// the device or allocate with cudaMalloc; may be called again before earlier work finishes,
  /// on the same stream (the delegate orders other streams after the previous call by event).
  virtual Status enqueue(cudaStream_t stream) = 0;

  /// True when enqueue blocks until the work is done and cannot be captured (TensorRT with
  /// weight streaming active). The delegate then rejects capture with a clear error.
  virtual bool enqueue_is_synchronous() const noexcept { return false; }
};

/// An engine, owned by the session that runs it.
using EnginePtr = std::unique_ptr<Engine>;

}  // namespace torch_tensorrt::executorch_backend::engine
