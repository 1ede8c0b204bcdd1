// The rules a blob's metadata must satisfy beyond its JSON types.
#pragma once

#include "blob/format.h"
#include "common/status.h"

namespace torch_tensorrt::executorch_backend::blob {

/// Ok when every binding name is non-empty and unique, every dimension
/// is >= -1, device_id is a device ordinal (0..INT32_MAX), and each alias names an existing output
/// and an existing input, with at most one alias per output and per input, the same dtype where
/// both are given, and, where both shapes are static, no more output elements than input
/// elements. Otherwise kInvalidProgram naming the first rule broken (names escaped).
Status validate_metadata(const Metadata& metadata);

}  // namespace torch_tensorrt::executorch_backend::blob
