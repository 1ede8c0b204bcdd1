// Reading a processed blob: header layout checks, then metadata. Layout: Note [Processed-blob
// layout] in blob/format.h.
#pragma once

#include <cstddef>

#include "blob/format.h"
#include "common/status.h"

namespace torch_tensorrt::executorch_backend::blob {

/// Decodes the 32-byte header of a `size`-byte blob and checks the layout: a known magic, the
/// metadata after the header and inside the blob, the engine 16-byte aligned and inside the blob,
/// the metadata ending at or before the engine. kInvalidProgram naming the failed check otherwise
/// (kInvalidArgument when `data` is null). Never throws.
Result<Header> parse_header(const void* data, size_t size);

/// Parses a whole blob: parse_header(), then the metadata JSON (metadata_from_json()), then its
/// rules (validate_metadata()); magic TR01 with aliased I/O is rejected (TR02 says "aliased I/O
/// inside"). The returned engine view points into `data`. Errors are kInvalidProgram with a
/// message saying which check failed (kMemoryAllocationFailed if decoding ran out of memory).
/// Never throws.
Result<ParsedBlob> parse_blob(const void* data, size_t size);

}  // namespace torch_tensorrt::executorch_backend::blob
