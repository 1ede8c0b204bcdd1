// libFuzzer target for trtet-run's .npy reader and --shape parser (untrusted input:
// docs/SECURITY.md). Beyond "no crash, no leak, no UB" it checks on every input:
//   - an array parse_npy accepts holds exactly the bytes its shape needs (counted without
//     overflow), and writing it again with format_npy parses back to the same array;
//   - every rejection carries a message, and no message carries a raw control character;
//   - a shape parse_dims accepts has dimensions ExecuTorch takes and an element count that fits.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/types.h"
#include "run/npy.h"
#include "run/options.h"

namespace ex = torch_tensorrt::executorch_backend;

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void check_message(const ex::Status& status) {
  check(!status.message().empty());
  for (const char c : status.message()) check(c != '\x1b' && c != '\x07' && c != '\0');
}

void fuzz_npy(const std::vector<std::uint8_t>& bytes) {
  auto parsed = trtet_run::parse_npy(bytes, "fuzz.npy");
  if (!parsed.ok()) {
    check_message(parsed.status());
    return;
  }
  const std::optional<std::int64_t> count = ex::checked_element_count(parsed->shape.data(), parsed->shape.size());
  check(count.has_value());
  const std::optional<std::size_t> size = ex::checked_byte_count(*count, trtet_run::npy_item_size(parsed->descr));
  check(size.has_value() && *size == parsed->data.size());
  auto written = trtet_run::format_npy(*parsed);
  check(written.ok());
  auto again = trtet_run::parse_npy(*written);
  check(again.ok());
  check(again->descr == parsed->descr && again->shape == parsed->shape && again->data == parsed->data);
}

void fuzz_dims(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size < 64 ? size : 64);
  auto dims = trtet_run::parse_dims(text);
  if (!dims.ok()) {
    check_message(dims.status());
    return;
  }
  std::vector<std::int64_t> checked;
  for (const long long d : *dims) {
    check(d >= 0 && d <= 2147483647LL);
    checked.push_back(d);
  }
  check(ex::checked_element_count(checked.data(), checked.size()).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_npy(std::vector<std::uint8_t>(data, data + size));
  fuzz_dims(data, size);
  return 0;
}
