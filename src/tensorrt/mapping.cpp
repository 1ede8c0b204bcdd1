#include "tensorrt/mapping.h"

#include <cstddef>
#include <unordered_map>

#include "common/escape.h"
#include "common/log.h"
#include "tensorrt/version.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

using nvinfer1::TensorIOMode;

/// A name from the blob or the engine (both the program's), quoted in a message: control
/// characters escaped, at most 128 bytes.
std::string q(const std::string& name) { return escape_for_message(name, 128); }

/// Dims → Shape; `allow_wildcard` keeps -1 dimensions.
Result<Shape> convert(const nvinfer1::Dims& dims, bool allow_wildcard) {
  TRTET_CHECK_OR_RETURN(dims.nbDims >= 0, kInvalidArgument, "TensorRT dims have no valid rank (nbDims %d)",
                        static_cast<int>(dims.nbDims));
  TRTET_CHECK_OR_RETURN(dims.nbDims <= Shape::kMaxRank, kInvalidArgument, "rank %d exceeds the maximum of %d",
                        static_cast<int>(dims.nbDims), Shape::kMaxRank);
  Shape shape;
  shape.rank = static_cast<int>(dims.nbDims);
  for (int i = 0; i < shape.rank; ++i) {
    const std::int64_t d = dims.d[i];
    TRTET_CHECK_OR_RETURN(d >= 0 || (allow_wildcard && d == -1), kInvalidArgument,
                          "dimension %d is %s (%lld)", i, d == -1 ? "not known" : "negative", static_cast<long long>(d));
    shape[i] = d;
  }
  return shape;
}

/// "input 2 (\"x\")" for messages.
std::string describe(std::size_t index, const blob::IoBinding& binding) {
  return std::string(binding.is_input ? "input" : "output") + " binding " + std::to_string(index) + " (\"" +
         q(binding.name) + "\")";
}

/// Checks the blob's optional dtype string against the engine's type.
Status check_dtype(const std::string& what, const blob::IoBinding& binding, DataType engine_type) {
  if (binding.dtype.empty()) return Status::Ok();
  const Result<DataType> listed = parse_data_type(binding.dtype);
  TRTET_CHECK_OR_RETURN(listed.ok(), kInvalidProgram, "%s: the blob's dtype \"%s\" is not a known type",
                        what.c_str(), q(binding.dtype).c_str());
  TRTET_CHECK_OR_RETURN(*listed == engine_type, kInvalidProgram,
                        "%s: the blob says dtype %s, the engine's tensor is %s", what.c_str(), to_string(*listed),
                        to_string(engine_type));
  return Status::Ok();
}

/// Checks the blob's optional shape against the engine's (-1 in either is a dynamic dimension;
/// a fixed blob dimension of an input must also lie within the profile).
Status check_shape(const std::string& what, const blob::IoBinding& binding, const Shape& engine_shape,
                   const engine::IoDesc& io) {
  if (binding.shape.empty()) return Status::Ok();
  TRTET_CHECK_OR_RETURN(binding.shape.size() == static_cast<std::size_t>(engine_shape.rank), kInvalidProgram,
                        "%s: the blob's shape has rank %zu, the engine's tensor %s has rank %d", what.c_str(),
                        binding.shape.size(), engine_shape.to_string().c_str(), engine_shape.rank);
  for (int i = 0; i < engine_shape.rank; ++i) {
    const std::int64_t want = binding.shape[static_cast<std::size_t>(i)];
    const std::int64_t have = engine_shape[i];
    if (want == -1) continue;
    TRTET_CHECK_OR_RETURN(want >= 0, kInvalidProgram, "%s: the blob's shape has dimension %d = %lld", what.c_str(), i,
                          static_cast<long long>(want));
    if (have >= 0) {
      TRTET_CHECK_OR_RETURN(want == have, kInvalidProgram,
                            "%s: the blob's shape has dimension %d = %lld, the engine's tensor %s fixes it to %lld",
                            what.c_str(), i, static_cast<long long>(want), engine_shape.to_string().c_str(),
                            static_cast<long long>(have));
    } else if (io.is_input) {
      TRTET_CHECK_OR_RETURN(want >= io.min_shape[i] && want <= io.max_shape[i], kInvalidProgram,
                            "%s: the blob's shape has dimension %d = %lld, outside the engine's profile %s..%s",
                            what.c_str(), i, static_cast<long long>(want), io.min_shape.to_string().c_str(),
                            io.max_shape.to_string().c_str());
    }
  }
  return Status::Ok();
}

/// An input's profile bounds: profile 0's min/max, or the tensor's own shape when it is static and
/// the engine reports no profile for it.
Status set_profile_bounds(const std::string& what, const EngineTensor& tensor, const Shape& shape, engine::IoDesc& io) {
  if (tensor.profile_min.nbDims < 0 && tensor.profile_max.nbDims < 0 && is_concrete(tensor.shape)) {
    io.min_shape = shape;
    io.max_shape = shape;
    return Status::Ok();
  }
  Result<Shape> min_shape = shape_from_dims(tensor.profile_min);
  TRTET_CHECK_OR_RETURN(min_shape.ok(), kInvalidProgram, "%s: the engine's profile 0 minimum is unusable: %s",
                        what.c_str(), min_shape.status().message().c_str());
  Result<Shape> max_shape = shape_from_dims(tensor.profile_max);
  TRTET_CHECK_OR_RETURN(max_shape.ok(), kInvalidProgram, "%s: the engine's profile 0 maximum is unusable: %s",
                        what.c_str(), max_shape.status().message().c_str());
  TRTET_CHECK_OR_RETURN(min_shape->rank == shape.rank && max_shape->rank == shape.rank, kInvalidProgram,
                        "%s: profile 0 bounds %s..%s do not have the tensor's rank %d", what.c_str(),
                        min_shape->to_string().c_str(), max_shape->to_string().c_str(), shape.rank);
  for (int i = 0; i < shape.rank; ++i) {
    TRTET_CHECK_OR_RETURN((*min_shape)[i] <= (*max_shape)[i], kInvalidProgram,
                          "%s: profile 0 minimum %s exceeds its maximum %s", what.c_str(),
                          min_shape->to_string().c_str(), max_shape->to_string().c_str());
  }
  io.min_shape = *min_shape;
  io.max_shape = *max_shape;
  return Status::Ok();
}

/// One binding: the blob's entry checked against the engine's tensor of the same name.
Result<engine::IoDesc> bind_one(std::size_t index, const blob::IoBinding& binding, const EngineTensor& tensor) {
  const std::string what = describe(index, binding);
  const bool engine_input = tensor.mode == TensorIOMode::kINPUT;
  TRTET_CHECK_OR_RETURN(tensor.mode != TensorIOMode::kNONE && engine_input == binding.is_input, kInvalidProgram,
                        "%s: the blob lists it as an %s, the engine's tensor \"%s\" is an %s", what.c_str(),
                        binding.is_input ? "input" : "output", q(tensor.name).c_str(), to_string(tensor.mode));
  TRTET_CHECK_OR_RETURN(!tensor.shape_tensor, kNotSupported,
                        "%s is a shape tensor (its values are read on the host), which this delegate cannot bind",
                        what.c_str());
  TRTET_CHECK_OR_RETURN(!tensor.on_host, kNotSupported,
                        "%s is located in host memory by the engine; this delegate binds device memory only", what.c_str());
  TRTET_CHECK_OR_RETURN(tensor.linear, kNotSupported,
                        "%s has a vectorized (non-linear) I/O format; rebuild the engine with linear I/O formats",
                        what.c_str());
  const std::optional<DataType> dtype = from_tensorrt(tensor.dtype);
  TRTET_CHECK_OR_RETURN(dtype.has_value(), kInvalidProgram, "%s: the engine's element type %s is not supported",
                        what.c_str(), to_string(tensor.dtype).c_str());
  TRTET_RETURN_IF_ERROR(check_dtype(what, binding, *dtype));
  Result<Shape> shape = pattern_from_dims(tensor.shape);
  TRTET_CHECK_OR_RETURN(shape.ok(), kInvalidProgram, "%s: the engine's shape is unusable: %s", what.c_str(),
                        shape.status().message().c_str());

  engine::IoDesc io;
  io.name = binding.name;
  io.is_input = binding.is_input;
  io.dtype = *dtype;
  if (io.is_input) {
    TRTET_RETURN_IF_ERROR(set_profile_bounds(what, tensor, *shape, io));
  } else {
    io.min_shape = *shape;  // outputs: a pattern, -1 where the engine decides at run time
    io.max_shape = *shape;
  }
  TRTET_RETURN_IF_ERROR(check_shape(what, binding, *shape, io));
  return io;
}

}  // namespace

std::optional<DataType> from_tensorrt(nvinfer1::DataType type) noexcept {
  switch (type) {
    case nvinfer1::DataType::kFLOAT: return DataType::kFloat32;
    case nvinfer1::DataType::kHALF: return DataType::kFloat16;
    case nvinfer1::DataType::kBF16: return DataType::kBFloat16;
    case nvinfer1::DataType::kINT8: return DataType::kInt8;
    case nvinfer1::DataType::kUINT8: return DataType::kUInt8;
    case nvinfer1::DataType::kINT32: return DataType::kInt32;
    case nvinfer1::DataType::kINT64: return DataType::kInt64;
    case nvinfer1::DataType::kBOOL: return DataType::kBool;
    case nvinfer1::DataType::kFP8: return DataType::kFloat8E4M3;
    default: return std::nullopt;  // kINT4, kFP4, kE8M0, and types newer than these headers
  }
}

std::optional<nvinfer1::DataType> to_tensorrt(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat32: return nvinfer1::DataType::kFLOAT;
    case DataType::kFloat16: return nvinfer1::DataType::kHALF;
    case DataType::kBFloat16: return nvinfer1::DataType::kBF16;
    case DataType::kFloat64: return std::nullopt;
    case DataType::kInt8: return nvinfer1::DataType::kINT8;
    case DataType::kUInt8: return nvinfer1::DataType::kUINT8;
    case DataType::kInt32: return nvinfer1::DataType::kINT32;
    case DataType::kInt64: return nvinfer1::DataType::kINT64;
    case DataType::kBool: return nvinfer1::DataType::kBOOL;
    case DataType::kFloat8E4M3: return nvinfer1::DataType::kFP8;
  }
  return std::nullopt;
}

std::string to_string(nvinfer1::DataType type) {
  switch (type) {
    case nvinfer1::DataType::kFLOAT: return "kFLOAT";
    case nvinfer1::DataType::kHALF: return "kHALF";
    case nvinfer1::DataType::kBF16: return "kBF16";
    case nvinfer1::DataType::kINT8: return "kINT8";
    case nvinfer1::DataType::kUINT8: return "kUINT8";
    case nvinfer1::DataType::kINT32: return "kINT32";
    case nvinfer1::DataType::kINT64: return "kINT64";
    case nvinfer1::DataType::kBOOL: return "kBOOL";
    case nvinfer1::DataType::kFP8: return "kFP8";
    case nvinfer1::DataType::kINT4: return "kINT4";
    default: return "DataType(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

const char* to_string(nvinfer1::TensorIOMode mode) noexcept {
  switch (mode) {
    case TensorIOMode::kINPUT: return "input";
    case TensorIOMode::kOUTPUT: return "output";
    case TensorIOMode::kNONE: return "neither input nor output";
  }
  return "unknown I/O mode";
}

Result<Shape> shape_from_dims(const nvinfer1::Dims& dims) { return convert(dims, /*allow_wildcard=*/false); }

Result<Shape> pattern_from_dims(const nvinfer1::Dims& dims) { return convert(dims, /*allow_wildcard=*/true); }

nvinfer1::Dims dims_from_shape(const Shape& shape) noexcept {
  static_assert(Shape::kMaxRank <= nvinfer1::Dims::MAX_DIMS, "a Shape must fit TensorRT's Dims");
  nvinfer1::Dims dims{};
  dims.nbDims = shape.rank;
  for (int i = 0; i < shape.rank; ++i) dims.d[i] = shape[i];
  return dims;
}

bool is_concrete(const nvinfer1::Dims& dims) noexcept {
  if (dims.nbDims < 0 || dims.nbDims > nvinfer1::Dims::MAX_DIMS) return false;
  for (int i = 0; i < dims.nbDims; ++i) {
    if (dims.d[i] < 0) return false;
  }
  return true;
}

Result<std::vector<engine::IoDesc>> bind_by_name(const blob::Metadata& metadata,
                                                 const std::vector<EngineTensor>& tensors) {
  TRTET_CHECK_OR_RETURN(!metadata.io_bindings.empty(), kInvalidProgram,
                        "the blob's metadata lists no io_bindings, so the engine's %zu I/O tensors cannot be ordered",
                        tensors.size());
  std::unordered_map<std::string, std::size_t> engine_index;
  for (std::size_t t = 0; t < tensors.size(); ++t) engine_index.emplace(tensors[t].name, t);
  std::unordered_map<std::string, std::size_t> listed;
  std::vector<engine::IoDesc> io;
  io.reserve(metadata.io_bindings.size());
  for (std::size_t i = 0; i < metadata.io_bindings.size(); ++i) {
    const blob::IoBinding& binding = metadata.io_bindings[i];
    const auto [previous, inserted] = listed.emplace(binding.name, i);
    TRTET_CHECK_OR_RETURN(inserted, kInvalidProgram, "the blob lists binding \"%s\" twice (bindings %zu and %zu)",
                          q(binding.name).c_str(), previous->second, i);
    const auto found = engine_index.find(binding.name);
    TRTET_CHECK_OR_RETURN(found != engine_index.end(), kInvalidProgram,
                          "%s: the engine has no I/O tensor of that name (it has %zu I/O tensors)",
                          describe(i, binding).c_str(), tensors.size());
    TRTET_ASSIGN_OR_RETURN(engine::IoDesc desc, bind_one(i, binding, tensors[found->second]));
    io.push_back(std::move(desc));
  }
  for (const EngineTensor& tensor : tensors) {
    TRTET_CHECK_OR_RETURN(listed.count(tensor.name) != 0, kInvalidProgram,
                          "the engine's %s tensor \"%s\" is not among the blob's io_bindings", to_string(tensor.mode),
                          q(tensor.name).c_str());
  }
  return io;
}

Result<std::vector<engine::Alias>> map_aliases(const blob::Metadata& metadata, const std::vector<engine::IoDesc>& io,
                                               const std::vector<EngineTensor>& tensors) {
  std::unordered_map<std::string, int> index_of;
  for (std::size_t i = 0; i < io.size(); ++i) index_of.emplace(io[i].name, static_cast<int>(i));
  std::unordered_map<std::string, const blob::AliasedIo*> declared;  // by output name
  std::vector<engine::Alias> aliases;
  aliases.reserve(metadata.aliased_io.size());
  for (const blob::AliasedIo& entry : metadata.aliased_io) {
    const auto output = index_of.find(entry.output);
    const auto input = index_of.find(entry.input);
    TRTET_CHECK_OR_RETURN(output != index_of.end() && !io[static_cast<std::size_t>(output->second)].is_input,
                          kInvalidProgram, "aliased_io names \"%s\" as an output, which no output binding is",
                          q(entry.output).c_str());
    TRTET_CHECK_OR_RETURN(input != index_of.end() && io[static_cast<std::size_t>(input->second)].is_input,
                          kInvalidProgram, "aliased_io names \"%s\" as an input, which no input binding is",
                          q(entry.input).c_str());
    TRTET_CHECK_OR_RETURN(declared.emplace(entry.output, &entry).second, kInvalidProgram,
                          "aliased_io lists output \"%s\" more than once", q(entry.output).c_str());
    engine::Alias alias;
    alias.output = output->second;
    alias.input = input->second;
    alias.kind = entry.kind;
    aliases.push_back(alias);
  }
  for (const EngineTensor& tensor : tensors) {
    const auto entry = declared.find(tensor.name);
    if (!tensor.aliased_input.empty()) {
      TRTET_CHECK_OR_RETURN(entry != declared.end(), kInvalidProgram,
                            "the engine updates output \"%s\" in place in input \"%s\", but the blob's aliased_io does "
                            "not declare it",
                            q(tensor.name).c_str(), q(tensor.aliased_input).c_str());
      TRTET_CHECK_OR_RETURN(entry->second->input == tensor.aliased_input, kInvalidProgram,
                            "the engine updates output \"%s\" in place in input \"%s\", the blob says input \"%s\"",
                            q(tensor.name).c_str(), q(tensor.aliased_input).c_str(), q(entry->second->input).c_str());
    } else if (TRTET_TENSORRT_HAS_ALIAS_QUERY && entry != declared.end() &&
               entry->second->kind == blob::AliasKind::kKvCacheUpdate) {
      log(LogLevel::kWarning,
          "the blob declares output \"%s\" a kv_cache_update alias of input \"%s\", but the engine does not report "
          "it as updated in place; binding it to the input's memory anyway",
          q(tensor.name).c_str(), q(entry->second->input).c_str());
    }
  }
  return aliases;
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
