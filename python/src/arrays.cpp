#include "arrays.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

namespace trtet_py {

namespace {

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

bool dtype_of(dl::dtype d, ScalarType& out) {
  if (d.lanes != 1) return false;
  const auto code = static_cast<dl::dtype_code>(d.code);
  switch (code) {
    case dl::dtype_code::Float:
      if (d.bits == 16) { out = ScalarType::Half; return true; }
      if (d.bits == 32) { out = ScalarType::Float; return true; }
      if (d.bits == 64) { out = ScalarType::Double; return true; }
      return false;
    case dl::dtype_code::Bfloat:
      if (d.bits == 16) { out = ScalarType::BFloat16; return true; }
      return false;
    case dl::dtype_code::Int:
      if (d.bits == 8) { out = ScalarType::Char; return true; }
      if (d.bits == 16) { out = ScalarType::Short; return true; }
      if (d.bits == 32) { out = ScalarType::Int; return true; }
      if (d.bits == 64) { out = ScalarType::Long; return true; }
      return false;
    case dl::dtype_code::UInt:
      if (d.bits == 8) { out = ScalarType::Byte; return true; }
      return false;
    case dl::dtype_code::Bool:
      if (d.bits == 8) { out = ScalarType::Bool; return true; }
      return false;
    default: return false;
  }
}

}  // namespace

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "uint8";
    case ScalarType::Char: return "int8";
    case ScalarType::Short: return "int16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Half: return "float16";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Bool: return "bool";
    case ScalarType::BFloat16: return "bfloat16";
    default: return "an unsupported dtype";
  }
}

dl::dtype dl_of(ScalarType t) {
  dl::dtype d{};
  d.lanes = 1;
  switch (t) {
    case ScalarType::Byte: d.code = (uint8_t)dl::dtype_code::UInt; d.bits = 8; break;
    case ScalarType::Char: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 8; break;
    case ScalarType::Short: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 16; break;
    case ScalarType::Int: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 32; break;
    case ScalarType::Long: d.code = (uint8_t)dl::dtype_code::Int; d.bits = 64; break;
    case ScalarType::Half: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 16; break;
    case ScalarType::Float: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 32; break;
    case ScalarType::Double: d.code = (uint8_t)dl::dtype_code::Float; d.bits = 64; break;
    case ScalarType::Bool: d.code = (uint8_t)dl::dtype_code::Bool; d.bits = 8; break;
    case ScalarType::BFloat16: d.code = (uint8_t)dl::dtype_code::Bfloat; d.bits = 16; break;
    default: d.bits = 0; break;
  }
  return d;
}

std::string shape_text(const std::vector<SizesType>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

ArrayArg array_arg(nb::handle obj, const std::string& what) {
  ArrayArg a;
  a.keep = nb::borrow(obj);
  std::vector<std::int64_t> shape, strides;  // strides in elements
  dl::dtype dtype{};
  int device_type = kDLCPU;
  nb::ndarray<> arr;
  if (nb::try_cast<nb::ndarray<>>(obj, arr, /*convert=*/false)) {
    a.data = arr.data();
    for (std::size_t i = 0; i < arr.ndim(); ++i) {
      shape.push_back(static_cast<std::int64_t>(arr.shape(i)));
      strides.push_back(arr.stride(i));
    }
    dtype = arr.dtype();
    device_type = arr.device_type();
    a.device = arr.device_id();
    a.keep = nb::cast(arr);  // holds the exporter's capsule: the memory stays valid
    a.keep = nb::borrow(obj);
  } else if (nb::hasattr(obj, "__cuda_array_interface__")) {
    nb::dict cai = nb::cast<nb::dict>(obj.attr("__cuda_array_interface__"));
    nb::tuple data = nb::cast<nb::tuple>(cai["data"]);
    a.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(data[0]));
    for (nb::handle d : nb::cast<nb::tuple>(cai["shape"])) shape.push_back(nb::cast<std::int64_t>(d));
    std::string typestr = nb::cast<std::string>(cai["typestr"]);
    if (typestr.size() < 3 || (typestr[0] != '<' && typestr[0] != '|'))
      raise(et::ErrorCode::kInvalidArgument, what + ": __cuda_array_interface__ typestr '" + typestr +
                                                 "' is not a little-endian type");
    const char kind = typestr[1];
    const int bytes = std::atoi(typestr.c_str() + 2);
    dtype.lanes = 1;
    dtype.bits = static_cast<uint8_t>(bytes * 8);
    dtype.code = static_cast<uint8_t>(kind == 'f' ? dl::dtype_code::Float : kind == 'i' ? dl::dtype_code::Int
                                      : kind == 'u' ? dl::dtype_code::UInt : kind == 'b' ? dl::dtype_code::Bool
                                      : dl::dtype_code::Complex);
    const std::size_t es = static_cast<std::size_t>(bytes > 0 ? bytes : 1);
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      for (nb::handle s : nb::cast<nb::tuple>(cai["strides"])) {
        const std::int64_t b = nb::cast<std::int64_t>(s);
        if (b % static_cast<std::int64_t>(es) != 0)
          raise(et::ErrorCode::kInvalidArgument, what + ": strides that are not whole elements");
        strides.push_back(b / static_cast<std::int64_t>(es));
      }
    }
    device_type = kDLCUDA;
    cudaPointerAttributes attr{};
    if (a.data != nullptr && cudaPointerGetAttributes(&attr, a.data) == cudaSuccess) {
      a.device = attr.device;
      if (attr.type == cudaMemoryTypeHost) device_type = kDLCUDAHost;
    } else {
      (void)cudaGetLastError();
    }
  } else {
    raise(et::ErrorCode::kInvalidArgument,
          what + ": " + nb::cast<std::string>(nb::str(obj.type())) +
              " is not an array (numpy, DLPack (__dlpack__) or __cuda_array_interface__)");
  }

  if (!dtype_of(dtype, a.type)) {
    raise(et::ErrorCode::kInvalidArgument, what + ": dtype (DLPack code " + std::to_string(dtype.code) + ", " +
                                               std::to_string(dtype.bits) + " bits) has no ExecuTorch scalar type");
  }
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) {
    a.cuda = true;
  } else if (device_type != kDLCPU && device_type != kDLCUDAHost) {
    raise(et::ErrorCode::kInvalidArgument, what + ": an array on DLPack device type " + std::to_string(device_type) +
                                               "; the program takes CPU or CUDA memory");
  }
  // C-contiguous, ignoring dimensions of one element (their strides mean nothing).
  if (!strides.empty()) {
    std::int64_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expected)
        raise(et::ErrorCode::kInvalidArgument,
              what + ": the array is not C-contiguous (dimension " + std::to_string(i) + " has stride " +
                  std::to_string(strides[i]) + " elements where " + std::to_string(expected) +
                  " is needed); pass a contiguous copy (e.g. .contiguous(), numpy.ascontiguousarray)");
      expected *= shape[i];
    }
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || shape[i] > std::numeric_limits<SizesType>::max())
      raise(et::ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(i) + " is " +
                                                 std::to_string(shape[i]) + ", beyond ExecuTorch's sizes");
    a.sizes.push_back(static_cast<SizesType>(shape[i]));
  }
  return a;
}

}  // namespace trtet_py
