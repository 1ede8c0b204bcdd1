// Build-time generator of the test programs' JSON: fills a program description (programs/*.json,
// flatc's JSON for ExecuTorch's program.fbs) with the bytes a JSON file cannot spell by hand.
//
//   make_test_program <template.json> <out.json> [--engine-spec TEXT] [--binding NAME:in|out]...
//
// In the template, "@BLOB@" becomes the byte array of a processed blob written by the project's
// own writer (blob::write_blob): the engine bytes are the test-engine spec TEXT (Note [test engine
// spec] in tests/engines/test_engine_factory.h), io_bindings the --binding list in order.
// "@TEXT:abc@" becomes the byte array of "abc" (compile-spec values, a malformed blob).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
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
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--engine-spec" && i + 1 < argc) {
      engine_spec = argv[++i];
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

  std::ofstream out(argv[2]);
  out << text;
  if (!out) return fail(std::string("cannot write ") + argv[2]);
  return 0;
}
