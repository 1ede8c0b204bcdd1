#include "blob/parse.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "blob/metadata_json.h"
#include "blob/validate.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

static_assert(kReservedField + sizeof(Header::reserved) == kHeaderSize, "header fields fill the header");

template <typename T>
T read_little_endian(const uint8_t* bytes) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(bytes[i]) << (8 * i);
  return value;
}

/// The magic as text, non-printable bytes as \xNN.
std::string describe_magic(const std::array<char, 4>& magic) {
  std::string text;
  for (const char c : magic) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      text += c;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      text += escaped;
    }
  }
  return text;
}

Status check_layout(const Header& h, size_t size) {
  TRTET_CHECK_OR_RETURN(h.magic == kMagicV1 || h.magic == kMagicV2, kInvalidProgram,
                        "blob: unknown magic \"%s\" (expected \"TR01\" or \"TR02\")", describe_magic(h.magic).c_str());
  TRTET_CHECK_OR_RETURN(h.metadata_offset >= kHeaderSize, kInvalidProgram,
                        "blob: metadata offset %u is inside the %zu-byte header", h.metadata_offset, kHeaderSize);
  const uint64_t metadata_end = uint64_t{h.metadata_offset} + h.metadata_size;
  TRTET_CHECK_OR_RETURN(metadata_end <= size, kInvalidProgram,
                        "blob: metadata [%u, %llu) extends past the end of the %zu-byte blob", h.metadata_offset,
                        static_cast<unsigned long long>(metadata_end), size);
  TRTET_CHECK_OR_RETURN(h.engine_offset % kEngineAlignment == 0, kInvalidProgram,
                        "blob: engine offset %u is not %zu-byte aligned", h.engine_offset, kEngineAlignment);
  TRTET_CHECK_OR_RETURN(h.engine_offset <= size && h.engine_size <= size - h.engine_offset, kInvalidProgram,
                        "blob: engine at offset %u with size %llu extends past the end of the %zu-byte blob",
                        h.engine_offset, static_cast<unsigned long long>(h.engine_size), size);
  TRTET_CHECK_OR_RETURN(metadata_end <= h.engine_offset, kInvalidProgram,
                        "blob: metadata [%u, %llu) overlaps the engine at offset %u (metadata must end before it)",
                        h.metadata_offset, static_cast<unsigned long long>(metadata_end), h.engine_offset);
  return Status::Ok();
}

Result<ParsedBlob> parse_blob_or_throw(const uint8_t* bytes, size_t size, const ParseLimits& limits) {
  ParsedBlob blob;
  TRTET_ASSIGN_OR_RETURN(blob.header, parse_header(bytes, size));
  const Header& h = blob.header;
  TRTET_CHECK_OR_RETURN(h.metadata_size <= limits.max_metadata_bytes, kInvalidProgram,
                        "blob: the metadata is %u bytes, more than the %zu this application accepts (the load-time "
                        "backend option %s raises the cap)",
                        h.metadata_size, limits.max_metadata_bytes, kMaxMetadataBytesOption);
  const std::string_view json(reinterpret_cast<const char*>(bytes + h.metadata_offset), h.metadata_size);
  TRTET_ASSIGN_OR_RETURN(blob.metadata, metadata_from_json(json));
  TRTET_RETURN_IF_ERROR(validate_metadata(blob.metadata));
  TRTET_CHECK_OR_RETURN(h.magic == kMagicV2 || blob.metadata.aliased_io.empty(), kInvalidProgram,
                        "blob: magic TR01 but the metadata carries %zu aliased_io entries (aliased I/O needs TR02)",
                        blob.metadata.aliased_io.size());
  blob.engine = bytes + h.engine_offset;
  blob.engine_size = static_cast<size_t>(h.engine_size);
  return blob;
}

}  // namespace

Result<Header> parse_header(const void* data, size_t size) {
  TRTET_CHECK_OR_RETURN(data != nullptr, kInvalidArgument, "blob: data is null");
  TRTET_CHECK_OR_RETURN(size >= kHeaderSize, kInvalidProgram, "blob: %zu bytes is shorter than the %zu-byte header",
                        size, kHeaderSize);
  const auto* bytes = static_cast<const uint8_t*>(data);
  Header h;
  std::memcpy(h.magic.data(), bytes + kMagicField, h.magic.size());
  h.metadata_offset = read_little_endian<uint32_t>(bytes + kMetadataOffsetField);
  h.metadata_size = read_little_endian<uint32_t>(bytes + kMetadataSizeField);
  h.engine_offset = read_little_endian<uint32_t>(bytes + kEngineOffsetField);
  h.engine_size = read_little_endian<uint64_t>(bytes + kEngineSizeField);
  std::memcpy(h.reserved.data(), bytes + kReservedField, h.reserved.size());
  TRTET_RETURN_IF_ERROR(check_layout(h, size));
  return h;
}

Result<ParsedBlob> parse_blob(const void* data, size_t size, const ParseLimits& limits) {
  try {
    TRTET_CHECK_OR_RETURN(data != nullptr, kInvalidArgument, "blob: data is null");
    return parse_blob_or_throw(static_cast<const uint8_t*>(data), size, limits);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kMemoryAllocationFailed, "blob: out of memory parsing a %zu-byte blob", size);
  }
}

}  // namespace torch_tensorrt::executorch_backend::blob
