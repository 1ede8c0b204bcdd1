// The TR01/TR02 processed-blob format: layout constants and the values a blob carries.
//
// Note [Processed-blob layout]
// A processed blob is what Torch-TensorRT's ExecuTorch backend stores for one TensorRT engine:
//
//   offset 0   magic                 4 bytes, "TR01", or "TR02" when aliased I/O is present
//   offset 4   metadata offset       u32 little-endian, >= kHeaderSize
//   offset 8   metadata size         u32
//   offset 12  engine offset         u32, a multiple of kEngineAlignment
//   offset 16  engine size           u64
//   offset 24  reserved              8 bytes; the writer puts 0x01 then seven 0x00 (kReserved)
//   metadata   UTF-8 JSON, compact, ASCII-only (non-ASCII escaped as \uXXXX)
//   padding    zero bytes up to the engine offset
//   engine     the serialized engine
//
// The metadata JSON, with keys in the writer's order and the defaults a reader applies when a key
// is absent (blobs written before aliased I/O existed have no "aliased_io"):
//   io_bindings          [] of {name (required), dtype "", shape [], is_input true}
//   aliased_io           [] of {output (required), input (required), kind "kv_cache_update"}
//   hardware_compatible  false
//   device_id            0
//   serialized_metadata  ""
//   target_platform      ""
// Unknown keys are ignored, so newer writers stay readable. Torch-TensorRT writes inputs first,
// then outputs, each with dtype "" and shape [].
#pragma once

#include <torch_tensorrt/executorch/BlobMetadata.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torch_tensorrt::executorch_backend::blob {

inline constexpr std::array<char, 4> kMagicV1 = {'T', 'R', '0', '1'};  ///< no aliased I/O
inline constexpr std::array<char, 4> kMagicV2 = {'T', 'R', '0', '2'};  ///< aliased I/O present
inline constexpr std::size_t kHeaderSize = 32;
/// Byte positions of the header fields (Python struct format "<4sIIIQ8s").
inline constexpr std::size_t kMagicField = 0;
inline constexpr std::size_t kMetadataOffsetField = 4;
inline constexpr std::size_t kMetadataSizeField = 8;
inline constexpr std::size_t kEngineOffsetField = 12;
inline constexpr std::size_t kEngineSizeField = 16;
inline constexpr std::size_t kReservedField = 24;
inline constexpr std::size_t kEngineAlignment = 16;
/// The reserved header bytes as the writer fills them; readers ignore them.
inline constexpr std::array<std::uint8_t, 8> kReserved = {0x01, 0, 0, 0, 0, 0, 0, 0};

/// How large a blob's metadata may be (Note [Metadata limits] in blob/parse.h): the default cap on
/// its bytes, which the application may raise (the load-time option max_blob_metadata_bytes), and
/// the fixed cap on how deeply its JSON nests (Torch-TensorRT's metadata nests 4 deep).
inline constexpr std::size_t kDefaultMaxMetadataBytes = std::size_t{1} << 20;
inline constexpr int kMaxMetadataDepth = 32;
/// The load-time backend option that raises the metadata cap (read by the ExecuTorch layer).
inline constexpr const char* kMaxMetadataBytesOption = "max_blob_metadata_bytes";

/// What parse_blob() accepts of a program's metadata: set by the application, never by the program.
struct ParseLimits {
  std::size_t max_metadata_bytes = kDefaultMaxMetadataBytes;
};

/// Alias kinds as spelled in the JSON.
inline constexpr std::string_view kAliasKindKvCacheUpdateName = "kv_cache_update";
inline constexpr std::string_view kAliasKindUserName = "user";

/// The JSON spelling of `kind`.
std::string_view to_string(AliasKind kind) noexcept;
/// The kind spelled `name`, or nullopt for an unknown spelling.
std::optional<AliasKind> alias_kind_from_string(std::string_view name) noexcept;

// AliasKind, IoBinding, AliasedIo and Metadata: what the metadata JSON carries, defined in the
// public engine API (torch_tensorrt/executorch/BlobMetadata.h), since an engine factory reads them.

/// The fixed 32-byte header, decoded.
struct Header {
  std::array<char, 4> magic{};
  uint32_t metadata_offset = 0;
  uint32_t metadata_size = 0;
  uint32_t engine_offset = 0;
  uint64_t engine_size = 0;
  std::array<std::uint8_t, 8> reserved{};  ///< as read; not validated
};

/// A parsed blob. `engine` points into the parsed buffer: valid only while that buffer lives.
struct ParsedBlob {
  Header header;
  Metadata metadata;
  const uint8_t* engine = nullptr;
  size_t engine_size = 0;
};

bool operator==(const IoBinding& a, const IoBinding& b);
bool operator!=(const IoBinding& a, const IoBinding& b);
bool operator==(const AliasedIo& a, const AliasedIo& b);
bool operator!=(const AliasedIo& a, const AliasedIo& b);
bool operator==(const Metadata& a, const Metadata& b);
bool operator!=(const Metadata& a, const Metadata& b);

}  // namespace torch_tensorrt::executorch_backend::blob
