// Value types shared by the engine seam and the delegate: element types and fixed-capacity shapes.
// DataType and Shape are the public engine API's (torch_tensorrt/executorch/Engine.h); the checked
// counts and the blob's dtype names are the library's own.
#pragma once

#include <torch_tensorrt/executorch/Engine.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend {

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

/// Byte count of `shape` elements of `dtype`; SIZE_MAX when it does not fit in size_t (the session's
/// checks and the staging's largest sizes).
std::size_t byte_size(const Shape& shape, DataType dtype) noexcept;

}  // namespace torch_tensorrt::executorch_backend
