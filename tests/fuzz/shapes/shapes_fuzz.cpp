// libFuzzer target (docs/SECURITY.md): the Triton backend's own reader of a program's flatbuffer
// (triton/src/program_shapes.cpp, Note [dynamic shapes]), which walks execution_plan, values, inputs
// and outputs by hand to find each tensor's shape dynamism. The input is the flatbuffer's bytes; the
// method asked for is "forward". Beyond "no crash, no leak, no UB": a refusal says why, an answer
// has no more tensors than the buffer has room for index words (each names a 4-byte index), and one
// scalar type per tensor.
#include "program_shapes.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  std::vector<trtet_triton::Dynamism> inputs, outputs;
  std::string why;
  trtet_triton::TensorTypes types;
  const bool ok = trtet_triton::method_dynamism_in(bytes, "forward", inputs, outputs, why, &types);
  if (!ok && why.empty()) {
    std::fprintf(stderr, "shapes_fuzz: refused without a reason\n");
    std::abort();
  }
  if (ok && (inputs.size() + outputs.size()) * 4 > size) {
    std::fprintf(stderr, "shapes_fuzz: %zu inputs and %zu outputs from %zu bytes\n", inputs.size(), outputs.size(), size);
    std::abort();
  }
  if (ok && (types.inputs.size() != inputs.size() || types.outputs.size() != outputs.size())) {
    std::fprintf(stderr, "shapes_fuzz: %zu input and %zu output types for %zu inputs and %zu outputs\n",
                 types.inputs.size(), types.outputs.size(), inputs.size(), outputs.size());
    std::abort();
  }
  return 0;
}
