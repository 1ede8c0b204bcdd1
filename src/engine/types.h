// Value types shared by the engine seam and the delegate: element types and fixed-capacity shapes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend {

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
/// The DataType a blob's dtype string names (accepts Torch-TensorRT's spellings, e.g. "float32",
/// "torch.float32", "fp32", "half"); kInvalidProgram for an unknown name.
Result<DataType> parse_data_type(std::string_view name);

/// The element count of a shape of `rank` dimensions `dims`: their product (1 for rank 0), or nullopt
/// when a dimension is negative or the product does not fit in int64. A zero dimension makes the
/// count 0 whatever the others are. The one checked element count of the delegate, the adapter and
/// trtet-run: a shape from a program or a file never reaches a multiplication unchecked.
std::optional<std::int64_t> checked_element_count(const std::int64_t* dims, std::size_t rank) noexcept;

/// The bytes of `count` elements of `element_bytes` each, or nullopt when `count` is negative or the
/// product does not fit in size_t.
std::optional<std::size_t> checked_byte_count(std::int64_t count, std::size_t element_bytes) noexcept;

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
  /// Product of the dimensions (1 for rank 0): checked_element_count(), or -1 where that has none
  /// (a negative dimension, or a product past int64).
  std::int64_t numel() const noexcept;
  bool operator==(const Shape& other) const noexcept;
  bool operator!=(const Shape& other) const noexcept { return !(*this == other); }
  /// "[2, 3, 4]".
  std::string to_string() const;
};

}  // namespace torch_tensorrt::executorch_backend
