#include "engine/types.h"

#include <cctype>
#include <cstdint>
#include <limits>

#include "common/escape.h"

namespace torch_tensorrt::executorch_backend {

std::size_t element_size(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kFloat64: return 8;
    case DataType::kInt8: return 1;
    case DataType::kUInt8: return 1;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kBool: return 1;
    case DataType::kFloat8E4M3: return 1;
  }
  return 0;
}

const char* to_string(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat64: return "float64";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kBool: return "bool";
    case DataType::kFloat8E4M3: return "float8_e4m3fn";
  }
  return "unknown";
}

Result<DataType> parse_data_type(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key.rfind("torch.", 0) == 0) key = key.substr(6);
  struct Entry {
    const char* name;
    DataType type;
  };
  static constexpr Entry kNames[] = {
      {"float32", DataType::kFloat32}, {"float", DataType::kFloat32},     {"fp32", DataType::kFloat32},
      {"f32", DataType::kFloat32},     {"float16", DataType::kFloat16},   {"half", DataType::kFloat16},
      {"fp16", DataType::kFloat16},    {"f16", DataType::kFloat16},       {"bfloat16", DataType::kBFloat16},
      {"bf16", DataType::kBFloat16},   {"float64", DataType::kFloat64},   {"double", DataType::kFloat64},
      {"int8", DataType::kInt8},       {"i8", DataType::kInt8},           {"uint8", DataType::kUInt8},
      {"u8", DataType::kUInt8},        {"int32", DataType::kInt32},       {"int", DataType::kInt32},
      {"i32", DataType::kInt32},       {"int64", DataType::kInt64},       {"long", DataType::kInt64},
      {"i64", DataType::kInt64},       {"bool", DataType::kBool},         {"float8_e4m3fn", DataType::kFloat8E4M3},
      {"fp8", DataType::kFloat8E4M3},
  };
  for (const Entry& e : kNames) {
    if (key == e.name) return e.type;
  }
  return make_error(ErrorCode::kInvalidProgram, "unknown dtype \"%s\"", escape_for_message(name, 64).c_str());
}

Shape::Shape(std::initializer_list<std::int64_t> list) {
  for (std::int64_t d : list) {
    if (rank == kMaxRank) break;
    dims[static_cast<std::size_t>(rank++)] = d;
  }
}

Result<Shape> Shape::from(const std::int64_t* values, std::size_t count) {
  TRTET_CHECK_OR_RETURN(count <= static_cast<std::size_t>(kMaxRank), kInvalidArgument,
                        "rank %zu exceeds the maximum of %d", count, kMaxRank);
  Shape shape;
  shape.rank = static_cast<int>(count);
  for (std::size_t i = 0; i < count; ++i) {
    TRTET_CHECK_OR_RETURN(values[i] >= 0, kInvalidArgument, "dimension %zu is negative (%lld)", i,
                          static_cast<long long>(values[i]));
    shape.dims[i] = values[i];
  }
  return shape;
}

std::optional<std::int64_t> checked_element_count(const std::int64_t* dims, std::size_t rank) noexcept {
  std::int64_t count = 1;
  bool overflowed = false;
  for (std::size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    if (dims[i] == 0) return 0;  // empty, whatever the other dimensions are
    if (!overflowed && __builtin_mul_overflow(count, dims[i], &count)) overflowed = true;
  }
  if (overflowed) return std::nullopt;
  return count;
}

std::optional<std::size_t> checked_byte_count(std::int64_t count, std::size_t element_bytes) noexcept {
  if (count < 0) return std::nullopt;
  if (static_cast<std::uint64_t>(count) > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(count), element_bytes, &bytes)) return std::nullopt;
  return bytes;
}

std::int64_t Shape::numel() const noexcept {
  const int shown = rank < 0 ? 0 : rank > kMaxRank ? kMaxRank : rank;
  return checked_element_count(dims.data(), static_cast<std::size_t>(shown)).value_or(-1);
}

bool Shape::operator==(const Shape& other) const noexcept {
  if (rank != other.rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (dims[static_cast<std::size_t>(i)] != other.dims[static_cast<std::size_t>(i)]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

std::size_t byte_size(const Shape& shape, DataType dtype) noexcept {
  std::size_t bytes = element_size(dtype);
  for (int d = 0; d < shape.rank; ++d) {
    const auto dim = static_cast<std::size_t>(shape[d]);
    if (dim == 0) return 0;
    if (__builtin_mul_overflow(bytes, dim, &bytes)) return SIZE_MAX;
  }
  return bytes;
}

}  // namespace torch_tensorrt::executorch_backend
