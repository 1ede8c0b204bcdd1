// The metadata JSON of a processed blob: decoding with types and defaults, and encoding exactly as
// Torch-TensorRT's writer does. Layout and defaults: Note [Processed-blob layout] in blob/format.h.
#pragma once

#include <string>
#include <string_view>

#include "blob/format.h"
#include "common/status.h"

namespace torch_tensorrt::executorch_backend::blob {

/// Decodes metadata JSON. Absent optional keys take the writer's defaults; unknown keys are
/// ignored; a key of the wrong type, a missing required key, or text that is not JSON is
/// kInvalidProgram naming the key ("io_bindings[2].shape[0] must be an integer, got float").
/// JSON nested deeper than kMaxMetadataDepth is refused before it is parsed (Note [Metadata
/// limits] in blob/parse.h). Checks types only: validate_metadata() checks names and aliases.
/// Never throws.
Result<Metadata> metadata_from_json(std::string_view text);

/// Encodes `metadata` byte for byte as Torch-TensorRT's Python writer does
/// (json.dumps(..., separators=(",", ":")): keys in the writer's order, no spaces, non-ASCII and
/// control characters escaped as \uXXXX). Invalid UTF-8 in a string is written as U+FFFD.
/// Writes what it is given without validating it. Throws only std::bad_alloc.
std::string metadata_to_json(const Metadata& metadata);

}  // namespace torch_tensorrt::executorch_backend::blob
