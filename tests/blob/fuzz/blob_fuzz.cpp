// libFuzzer target for the processed-blob parser. Beyond "no crash, no leak, no UB" it checks two
// properties on every input:
//   - a blob parse_blob accepts, written again with write_blob, parses to the same metadata and
//     engine bytes, and writing that gives the same bytes again;
//   - every rejection carries a message.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "blob/parse.h"
#include "blob/write.h"

namespace blob = torch_tensorrt::executorch_backend::blob;

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void fuzz_blob(const uint8_t* data, size_t size) {
  auto parsed = blob::parse_blob(data, size);
  if (!parsed.ok()) {
    check(!parsed.status().message().empty());
    return;
  }
  check(parsed->engine_size == 0 || parsed->engine >= data);
  check(parsed->engine + parsed->engine_size <= data + size);
  const std::vector<uint8_t> written = blob::write_blob(parsed->metadata, parsed->engine, parsed->engine_size);
  auto again = blob::parse_blob(written.data(), written.size());
  check(again.ok());
  check(again->metadata == parsed->metadata);
  check(again->engine_size == parsed->engine_size);
  check(parsed->engine_size == 0 || std::memcmp(again->engine, parsed->engine, parsed->engine_size) == 0);
  check(blob::write_blob(again->metadata, again->engine, again->engine_size) == written);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_blob(data, size);
  return 0;
}
