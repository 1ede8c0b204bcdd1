// Reading a processed blob: header layout checks, then metadata. Layout: Note [Processed-blob
// layout] in blob/format.h.
//
// Note [Metadata limits]
// A blob comes from the program, which is untrusted (docs/SECURITY.md): its header may name up to
// 4 GiB of metadata, and JSON nested a million deep costs the parser seconds and gigabytes. So
// parse_blob() refuses metadata larger than ParseLimits::max_metadata_bytes (1 MiB unless the
// application raises it with the load-time option max_blob_metadata_bytes) before decoding it,
// and JSON nested deeper than kMaxMetadataDepth before building it (metadata_from_json()). Real
// metadata is a few KiB and nests 4 deep.
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
/// Metadata past `limits.max_metadata_bytes` is kInvalidProgram naming the cap and the load-time
/// option that raises it (Note [Metadata limits]). Never throws.
Result<ParsedBlob> parse_blob(const void* data, size_t size, const ParseLimits& limits = ParseLimits{});

}  // namespace torch_tensorrt::executorch_backend::blob
