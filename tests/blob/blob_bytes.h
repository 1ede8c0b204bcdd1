// Test-side construction of processed blobs straight from the layout (struct "<4sIIIQ8s", JSON,
// zero padding, engine), independent of blob::write_blob, so tests can compare the writer with it
// and build blobs the writer never would.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "blob/format.h"

namespace trtet_test::blob_bytes {

namespace blob = torch_tensorrt::executorch_backend::blob;

using Bytes = std::vector<uint8_t>;

struct RawHeader {
  std::array<char, 4> magic = blob::kMagicV1;
  uint32_t metadata_offset = 0;
  uint32_t metadata_size = 0;
  uint32_t engine_offset = 0;
  uint64_t engine_size = 0;
  std::array<uint8_t, 8> reserved = blob::kReserved;
};

inline void put_le(Bytes& out, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

/// The 32 header bytes, packed field after field as Python's struct.pack("<4sIIIQ8s", ...) does.
inline Bytes pack_header(const RawHeader& h) {
  Bytes out(h.magic.begin(), h.magic.end());
  put_le(out, h.metadata_offset, 4);
  put_le(out, h.metadata_size, 4);
  put_le(out, h.engine_offset, 4);
  put_le(out, h.engine_size, 8);
  out.insert(out.end(), h.reserved.begin(), h.reserved.end());
  return out;
}

/// Header + `json` + zero padding to a multiple of 16 + `engine`: the writer's layout.
inline Bytes make_blob(std::string_view json, std::string_view engine, std::array<char, 4> magic = blob::kMagicV1) {
  RawHeader h;
  h.magic = magic;
  h.metadata_offset = static_cast<uint32_t>(blob::kHeaderSize);
  h.metadata_size = static_cast<uint32_t>(json.size());
  h.engine_offset = static_cast<uint32_t>((blob::kHeaderSize + json.size() + 15) / 16 * 16);
  h.engine_size = engine.size();
  Bytes out = pack_header(h);
  out.insert(out.end(), json.begin(), json.end());
  out.resize(h.engine_offset, 0);
  out.insert(out.end(), engine.begin(), engine.end());
  return out;
}

/// Overwrites the little-endian u32 at `at`.
inline void set_u32(Bytes& blob, size_t at, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) blob[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
/// Overwrites the little-endian u64 at `at`.
inline void set_u64(Bytes& blob, size_t at, uint64_t value) {
  for (size_t i = 0; i < 8; ++i) blob[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
inline uint32_t get_u32(const Bytes& blob, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= static_cast<uint32_t>(blob[at + i]) << (8 * i);
  return value;
}

inline std::string to_string(const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

/// One io_bindings entry.
inline blob::IoBinding binding(std::string name, bool is_input, std::string dtype = "",
                               std::vector<int64_t> shape = {}) {
  blob::IoBinding b;
  b.name = std::move(name);
  b.dtype = std::move(dtype);
  b.shape = std::move(shape);
  b.is_input = is_input;
  return b;
}

}  // namespace trtet_test::blob_bytes
