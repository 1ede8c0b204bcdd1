// Build-time generator of the test programs' JSON: fills a program description (programs/*.json,
// flatc's JSON for ExecuTorch's program.fbs) with the bytes a JSON file cannot spell by hand.
//
//   make_test_program <template.json> <out.json> [--engine-spec TEXT] [--binding NAME:in|out]...
//                     [--device-id N] [--set KEY=VALUE]...
//
// In the template, "@BLOB@" becomes the byte array of a processed blob written by the project's
// own writer (blob::write_blob): the engine bytes are the test-engine spec TEXT (Note [test engine
// spec] in tests/engines/test_engine_factory.h), io_bindings the --binding list in order, its
// device_id N (default 0).
// "@TEXT:abc@" becomes the byte array of "abc" (compile-spec values, a malformed blob).
// "@KEY@" (a JSON string, quotes included) becomes VALUE as written, for each --set KEY=VALUE: a
// number in a template that stays valid JSON (sizes, arena offsets, device indices); a KEY the
// template does not use is ignored, a "@KEY@" left without a --set is an error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "blob/format.h"
#include "blob/write.h"

namespace blob = torch_tensorrt::executorch_backend::blob;

namespace {

std::string byte_array(const std::uint8_t* data, std::size_t size) {
  std::string out = "[";
  for (std::size_t i = 0; i < size; ++i) {
    if (i != 0) out += (i % 32 == 0) ? ",\n" : ",";
    out += std::to_string(static_cast<unsigned>(data[i]));
  }
  return out + "]";
}

int fail(const std::string& message) {
  std::cerr << "make_test_program: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage: make_test_program <template.json> <out.json> [--engine-spec TEXT] [--binding NAME:in|out]...");
  std::string engine_spec;
  blob::Metadata metadata;
  std::vector<std::pair<std::string, std::string>> sets;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--engine-spec" && i + 1 < argc) {
      engine_spec = argv[++i];
    } else if (arg == "--device-id" && i + 1 < argc) {
      const std::string value = argv[++i];
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 9)
        return fail("--device-id wants a device ordinal, got " + value);
      metadata.device_id = std::stoll(value);
    } else if (arg == "--set" && i + 1 < argc) {
      const std::string set = argv[++i];
      const auto eq = set.find('=');
      if (eq == std::string::npos || eq == 0) return fail("--set wants KEY=VALUE, got " + set);
      sets.emplace_back(set.substr(0, eq), set.substr(eq + 1));
    } else if (arg == "--binding" && i + 1 < argc) {
      const std::string binding = argv[++i];
      const auto colon = binding.rfind(':');
      if (colon == std::string::npos) return fail("--binding wants NAME:in or NAME:out, got " + binding);
      const std::string direction = binding.substr(colon + 1);
      if (direction != "in" && direction != "out") return fail("--binding wants NAME:in or NAME:out, got " + binding);
      blob::IoBinding io;
      io.name = binding.substr(0, colon);
      io.is_input = direction == "in";
      metadata.io_bindings.push_back(io);
    } else {
      return fail("unknown argument " + arg);
    }
  }

  std::ifstream in(argv[1]);
  if (!in) return fail(std::string("cannot read ") + argv[1]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();

  for (const auto& [key, value] : sets) {
    const std::string marker = "\"@" + key + "@\"";
    for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker, at + value.size()))
      text.replace(at, marker.size(), value);
  }
  const std::string blob_marker = "\"@BLOB@\"";
  for (auto at = text.find(blob_marker); at != std::string::npos; at = text.find(blob_marker)) {
    if (engine_spec.empty()) return fail("the template has @BLOB@ but no --engine-spec was given");
    const std::vector<std::uint8_t> bytes = blob::write_blob(metadata, engine_spec.data(), engine_spec.size());
    if (bytes.empty()) return fail("write_blob failed");
    text.replace(at, blob_marker.size(), byte_array(bytes.data(), bytes.size()));
  }
  const std::string text_marker = "\"@TEXT:";
  for (auto at = text.find(text_marker); at != std::string::npos; at = text.find(text_marker)) {
    const auto end = text.find("@\"", at + text_marker.size());
    if (end == std::string::npos) return fail("unterminated @TEXT:...@");
    const std::string value = text.substr(at + text_marker.size(), end - at - text_marker.size());
    text.replace(at, end + 2 - at, byte_array(reinterpret_cast<const std::uint8_t*>(value.data()), value.size()));
  }

  // A "@KEY@" no --set filled (other than @BLOB@ and @TEXT:...@, replaced above).
  if (const auto at = text.find("\"@"); at != std::string::npos) {
    const auto end = text.find("@\"", at + 2);
    return fail("the template's " + text.substr(at, end == std::string::npos ? 20 : end + 2 - at) +
                " has no --set");
  }

  std::ofstream out(argv[2]);
  out << text;
  if (!out) return fail(std::string("cannot write ") + argv[2]);
  return 0;
}
