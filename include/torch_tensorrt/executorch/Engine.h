// The engine API: bring your own inference engine to the TensorRT delegate.
//
// The delegate runs an Engine (the subset of TensorRT's IExecutionContext it uses: shapes,
// addresses, profiles, auxiliary streams, enqueue) and gets each one from the process's engine
// factory when ExecuTorch loads a method. The TensorRT adapter installs itself as that factory
// where it is built; set_engine_factory() installs yours instead:
//
//   namespace et = torch_tensorrt::executorch_backend;
//   et::set_engine_factory([](const et::EngineRequest& request) -> et::Result<et::engine::EnginePtr> {
//     // request.engine_bytes/engine_size: the blob's engine; request.metadata->io_bindings: its I/O
//     return std::make_unique<MyEngine>(request);  // or an et::Error saying why not
//   });
//
// The delegate never calls one engine from two threads at once. Failures are Errors (Error.h);
// an exception thrown by a factory or an engine is turned into kInternal by init() and execute().
//
// Versioned: TORCHTRT_EXECUTORCH_ENGINE_API_VERSION (also kEngineApiVersion) is the version of
// every declaration here and in BlobMetadata.h. It goes up whenever one of them changes in a way
// that breaks source or binaries built against the previous version (a virtual function added to
// Engine, even with a default, changes its vtable); engine_api_version() is the version the
// library was built with, so an engine built as a separate binary can check it before installing
// its factory.
#pragma once

#include <cuda_runtime_api.h>
#include <torch_tensorrt/executorch/BlobMetadata.h>
#include <torch_tensorrt/executorch/Error.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

/// The version of the engine API this header declares.
#define TORCHTRT_EXECUTORCH_ENGINE_API_VERSION 1

namespace torch_tensorrt::executorch_backend {

/// The version of the engine API this header declares (TORCHTRT_EXECUTORCH_ENGINE_API_VERSION).
inline constexpr int kEngineApiVersion = TORCHTRT_EXECUTORCH_ENGINE_API_VERSION;

/// The version of the engine API the loaded library was built with: equal to kEngineApiVersion
/// when the headers and the library match.
int engine_api_version() noexcept;

// ---- values: element types and shapes ----

/// Element types a binding can have (the set Torch-TensorRT's blob metadata names).
enum class DataType : std::uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
  kFloat8E4M3,
};

/// Bytes per element of `dtype`.
std::size_t element_size(DataType dtype) noexcept;
/// A short name, e.g. "float32".
const char* to_string(DataType dtype) noexcept;

/// A tensor shape of at most kMaxRank dimensions, without heap allocation (TensorRT's Dims limit).
struct Shape {
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  /// kInvalidArgument when `rank` exceeds kMaxRank or a dimension is negative.
  static Result<Shape> from(const std::int64_t* dims, std::size_t rank);

  int rank = 0;
  std::array<std::int64_t, kMaxRank> dims{};

  std::int64_t operator[](int i) const { return dims[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims[static_cast<std::size_t>(i)]; }
  /// Product of the dimensions (1 for rank 0; 0 when a dimension is 0), or -1 where it has none
  /// (a negative dimension, or a product past int64). Overflow is checked.
  std::int64_t numel() const noexcept;
  bool operator==(const Shape& other) const noexcept;
  bool operator!=(const Shape& other) const noexcept { return !(*this == other); }
  /// "[2, 3, 4]".
  std::string to_string() const;
};

// ---- the engine seam ----

namespace engine {

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

/// How an output aliases an input: the blob's own kind (BlobMetadata.h), the same type.
using AliasKind = blob::AliasKind;

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
                        : Status(ErrorCode::kInvalidArgument,
                                 "engine has 1 optimization profile, not " + std::to_string(profile + 1));
  }

  /// Number of auxiliary streams the engine wants for parallel work (0: none).
  virtual int aux_stream_count() const noexcept { return 0; }
  /// Hands the engine its auxiliary streams (made by the delegate on the caller's green context
  /// or device). Called before enqueue whenever the stream set changes.
  virtual Status set_aux_streams(cudaStream_t* streams, int count) {
    (void)streams;
    return count == 0 ? Status::Ok() : Status(ErrorCode::kNotSupported, "engine takes no auxiliary streams");
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

}  // namespace engine

// ---- where engines come from ----

/// What the host knows about the engine to build. Every pointer is valid only during the call:
/// the processed blob is freed right after the factory returns, so an engine copies (or
/// deserializes) what it keeps.
struct EngineRequest {
  const std::uint8_t* engine_bytes = nullptr;  ///< the blob's serialized engine
  std::size_t engine_size = 0;
  const blob::Metadata* metadata = nullptr;    ///< the blob's metadata (io_bindings, aliased_io, ...)
  int device = 0;                              ///< metadata device_id: the CUDA device to build on
  /// Weight-streaming budget in bytes: the load-time option, else the compile spec; unset when
  /// neither names one.
  std::optional<std::uint64_t> weight_streaming_budget;
  const char* method_name = nullptr;           ///< the ExecuTorch method being loaded, when known
  /// Which runtime library serves the engine, in search order: the load-time backend option
  /// `tensorrt_runtime` (e.g. "lean,dispatch" or a path; the adapter parses it). Unset when the
  /// host was given none: the adapter then reads TRTET_TENSORRT_RUNTIME, else uses its default.
  std::optional<std::string> runtime_library;
  /// Whether the engine may run native code it carries (an embedded lean runtime, which the
  /// dispatch runtime runs; serialized plugin libraries): the load-time backend option
  /// `allow_engine_host_code`. Unset when the host was given none: the adapter then reads
  /// TRTET_ALLOW_ENGINE_HOST_CODE, else does not allow it (docs/SECURITY.md).
  std::optional<bool> allow_engine_host_code;
};

/// Builds an engine whose bindings follow the blob's io_bindings order (init() checks names and
/// directions against them), or says why not. Its error becomes init()'s (Error.h lists the
/// ExecuTorch error of each code), except kNoDevice: then the method still loads, and its
/// execute() reports the missing device (AccessFailed).
using EngineFactory = std::function<Result<engine::EnginePtr>(const EngineRequest& request)>;

/// Installs `factory` for every later init() in the process (an empty function removes it: init()
/// then fails with NotSupported) and returns the one it replaces. Thread-safe; methods already
/// loaded keep their engines.
EngineFactory set_engine_factory(EngineFactory factory);

/// A copy of the installed factory (empty when none is installed). Thread-safe.
EngineFactory engine_factory();

/// Installs `factory` for a scope and restores the previous one after it.
class ScopedEngineFactory {
 public:
  explicit ScopedEngineFactory(EngineFactory factory) : previous_(set_engine_factory(std::move(factory))) {}
  ~ScopedEngineFactory() { set_engine_factory(std::move(previous_)); }
  ScopedEngineFactory(const ScopedEngineFactory&) = delete;             // one restore per install
  ScopedEngineFactory& operator=(const ScopedEngineFactory&) = delete;  // likewise
  ScopedEngineFactory(ScopedEngineFactory&&) = delete;                  // tied to one scope
  ScopedEngineFactory& operator=(ScopedEngineFactory&&) = delete;       // likewise

 private:
  EngineFactory previous_;
};

}  // namespace torch_tensorrt::executorch_backend
