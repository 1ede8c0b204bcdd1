// Writing a processed blob byte for byte as Torch-TensorRT's Python writer does. Layout: Note
// [Processed-blob layout] in blob/format.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "blob/format.h"

namespace torch_tensorrt::executorch_backend::blob {

/// A blob holding `metadata` (as metadata_to_json() encodes it) and the `engine_size` bytes at
/// `engine` (which may be null when `engine_size` is 0): magic TR02 exactly when
/// `metadata.aliased_io` is non-empty, else TR01; metadata right after the header; zero padding up
/// to a 16-byte-aligned engine offset; reserved bytes kReserved. The metadata is written as given,
/// not validated, so tests can build blobs that parse_blob() must reject. Returns an empty vector
/// (which no parser accepts) when memory runs out or the metadata is too large for the u32
/// offsets. Never throws.
std::vector<uint8_t> write_blob(const Metadata& metadata, const void* engine, size_t engine_size);

}  // namespace torch_tensorrt::executorch_backend::blob
