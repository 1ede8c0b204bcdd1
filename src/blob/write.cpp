#include "blob/write.h"

#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "blob/metadata_json.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

template <typename T>
void append_little_endian(std::vector<uint8_t>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

size_t align_up(size_t offset, size_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

}  // namespace

std::vector<uint8_t> write_blob(const Metadata& metadata, const void* engine, size_t engine_size) {
  try {
    const std::string json = metadata_to_json(metadata);
    const size_t metadata_offset = kHeaderSize;
    if (json.size() > std::numeric_limits<uint32_t>::max() - metadata_offset - kEngineAlignment) return {};
    const size_t engine_offset = align_up(metadata_offset + json.size(), kEngineAlignment);

    std::vector<uint8_t> out;
    out.reserve(engine_offset + engine_size);
    const std::array<char, 4>& magic = metadata.aliased_io.empty() ? kMagicV1 : kMagicV2;
    out.insert(out.end(), magic.begin(), magic.end());
    append_little_endian<uint32_t>(out, static_cast<uint32_t>(metadata_offset));
    append_little_endian<uint32_t>(out, static_cast<uint32_t>(json.size()));
    append_little_endian<uint32_t>(out, static_cast<uint32_t>(engine_offset));
    append_little_endian<uint64_t>(out, engine_size);
    out.insert(out.end(), kReserved.begin(), kReserved.end());
    out.insert(out.end(), json.begin(), json.end());
    out.resize(engine_offset, 0);  // zero padding up to the aligned engine offset
    if (engine_size > 0) {
      const auto* bytes = static_cast<const uint8_t*>(engine);
      out.insert(out.end(), bytes, bytes + engine_size);
    }
    return out;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

}  // namespace torch_tensorrt::executorch_backend::blob
