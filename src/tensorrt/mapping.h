// Pure translation between TensorRT's values and the engine seam's: element types, Dims and
// Shape, and the binding table (the blob's io_bindings matched by name to the engine's I/O
// tensors). No call here reaches libnvinfer, so it is tested wherever TensorRT's headers exist.
#pragma once

#include <NvInferRuntime.h>

#include <optional>
#include <string>
#include <vector>

#include "blob/format.h"
#include "common/status.h"
#include "engine/engine.h"
#include "engine/types.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// Our DataType for TensorRT's `type`; nullopt for types a binding cannot have here (kINT4,
/// kFP4, kE8M0 and any type newer than these headers: sub-byte or scale-only types).
std::optional<DataType> from_tensorrt(nvinfer1::DataType type) noexcept;

/// TensorRT's DataType for `type`; nullopt for kFloat64 (TensorRT has no 64-bit float).
std::optional<nvinfer1::DataType> to_tensorrt(DataType type) noexcept;

/// TensorRT's spelling of `type` for messages, e.g. "kFLOAT"; "DataType(<n>)" for an unknown value.
std::string to_string(nvinfer1::DataType type);

/// "input", "output" or "neither" (kNONE), for messages.
const char* to_string(nvinfer1::TensorIOMode mode) noexcept;

/// A concrete shape from TensorRT dims: kInvalidArgument for an invalid or unknown rank
/// (nbDims < 0), a rank above Shape::kMaxRank, or a wildcard (-1) or other negative dimension.
Result<Shape> shape_from_dims(const nvinfer1::Dims& dims);

/// The same, but a -1 dimension (dynamic or data-dependent) is kept as -1: a shape pattern, as an
/// output's IoDesc carries. Other negative dimensions and bad ranks are kInvalidArgument.
Result<Shape> pattern_from_dims(const nvinfer1::Dims& dims);

/// TensorRT dims for `shape` (same rank and extents; unused entries zeroed).
nvinfer1::Dims dims_from_shape(const Shape& shape) noexcept;

/// True when no dimension of `dims` is negative and the rank is known.
bool is_concrete(const nvinfer1::Dims& dims) noexcept;

/// What the adapter reads about one I/O tensor of a deserialized engine (ICudaEngine queries).
struct EngineTensor {
  std::string name;
  nvinfer1::TensorIOMode mode = nvinfer1::TensorIOMode::kNONE;
  nvinfer1::DataType dtype = nvinfer1::DataType::kFLOAT;
  nvinfer1::Dims shape{};        ///< getTensorShape: -1 marks a dynamic dimension
  nvinfer1::Dims profile_min{};  ///< inputs: getProfileShape(name, 0, kMIN); nbDims -1 when absent
  nvinfer1::Dims profile_max{};  ///< inputs: getProfileShape(name, 0, kMAX)
  bool shape_tensor = false;     ///< isShapeInferenceIO: its values are read on the host
  bool on_host = false;          ///< getTensorLocation is kHOST
  bool linear = true;            ///< getTensorFormat is kLINEAR
  /// getAliasedInputTensor (TensorRT 10.15+): the input an output is updated in place into; empty
  /// when none or when the headers cannot ask.
  std::string aliased_input;
};

/// The seam's binding table: binding i is the blob's io_bindings[i], matched by name to the
/// engine's tensor. kInvalidProgram, naming the binding, when: the blob lists no bindings or a
/// name twice; a blob name is not an engine tensor, or an engine tensor is missing from the blob;
/// input/output disagree; the blob's dtype (when not "") or shape (when not []) contradicts the
/// engine; the engine's dtype has no DataType here; an input's profile bounds are unusable.
/// kNotSupported for tensors the delegate cannot bind: shape tensors, host-located or non-linear I/O.
Result<std::vector<engine::IoDesc>> bind_by_name(const blob::Metadata& metadata,
                                                 const std::vector<EngineTensor>& tensors);

/// The blob's aliased_io as binding indices of `io` (from bind_by_name). kInvalidProgram when an
/// alias names an unknown binding, an output that is an input or the reverse, or when the engine
/// reports an in-place output (EngineTensor::aliased_input) that the blob does not declare or
/// declares with another input. A kv_cache_update alias the engine does not report is logged.
Result<std::vector<engine::Alias>> map_aliases(const blob::Metadata& metadata, const std::vector<engine::IoDesc>& io,
                                               const std::vector<EngineTensor>& tensors);

}  // namespace torch_tensorrt::executorch_backend::tensorrt
