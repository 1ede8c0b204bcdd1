#include "session/aliases.h"

#include <cstdint>
#include <optional>
#include <string>

#include "common/escape.h"
#include "common/log.h"
#include "engine/types.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

/// A binding's name quoted in a message (names come from the program).
std::string quoted(const engine::IoDesc& io) { return escape_for_message(io.name, 128); }

/// The bytes of `shape` of `dtype`; nullopt when they do not fit in size_t (checked_element_count).
std::optional<std::size_t> bytes_of(const Shape& shape, DataType dtype) {
  const std::optional<std::int64_t> count =
      checked_element_count(shape.dims.data(), static_cast<std::size_t>(shape.rank < 0 ? 0 : shape.rank));
  if (!count) return std::nullopt;
  return checked_byte_count(*count, element_size(dtype));
}

/// Each aliased output's bytes with every input at profile 0's maximum; nullopt per output where
/// that is unknown (shape inference fails or leaves the shape open).
std::vector<std::optional<std::size_t>> output_bytes_at_profile0_max(engine::Engine& engine) {
  const int count = engine.io_count();
  std::vector<std::optional<std::size_t>> bytes(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    if (!engine.io(i).is_input) continue;
    const Status set = engine.set_input_shape(i, engine.input_bounds(0, i).max);
    if (!set.ok()) {
      log(LogLevel::kDebug, "aliased outputs: input %d at profile 0's maximum: %s (checked on each call)", i,
          set.to_string().c_str());
      return bytes;
    }
  }
  const Result<int> unresolved = engine.infer_shapes();
  if (!unresolved.ok()) {
    log(LogLevel::kDebug, "aliased outputs: shapes at profile 0's maximum unknown: %s (checked on each call)",
        unresolved.status().to_string().c_str());
    return bytes;
  }
  for (const engine::Alias& alias : engine.aliases()) {
    const Result<Shape> shape = engine.output_shape(alias.output);
    if (shape.ok()) bytes[static_cast<std::size_t>(alias.output)] = bytes_of(*shape, engine.io(alias.output).dtype);
  }
  return bytes;
}

}  // namespace

Result<std::vector<int>> validate_aliases(engine::Engine& engine) {
  const int count = engine.io_count();
  std::vector<int> input_of_output(static_cast<std::size_t>(count), -1);
  std::vector<int> output_of_input(static_cast<std::size_t>(count), -1);
  for (const engine::Alias& alias : engine.aliases()) {
    TRTET_CHECK_OR_RETURN(alias.output >= 0 && alias.output < count && !engine.io(alias.output).is_input,
                          kInvalidProgram, "alias names binding %d as an output, which it is not", alias.output);
    TRTET_CHECK_OR_RETURN(alias.input >= 0 && alias.input < count && engine.io(alias.input).is_input,
                          kInvalidProgram, "alias names binding %d as an input, which it is not", alias.input);
    const engine::IoDesc& out = engine.io(alias.output);
    const engine::IoDesc& in = engine.io(alias.input);
    TRTET_CHECK_OR_RETURN(input_of_output[static_cast<std::size_t>(alias.output)] < 0, kInvalidProgram,
                          "output %d (\"%s\") is aliased twice", alias.output, quoted(out).c_str());
    const int other = output_of_input[static_cast<std::size_t>(alias.input)];
    TRTET_CHECK_OR_RETURN(other < 0, kInvalidProgram,
                          "outputs %d (\"%s\") and %d (\"%s\") are both written into input %d (\"%s\"); an input "
                          "takes at most one aliased output",
                          other, other >= 0 ? quoted(engine.io(other)).c_str() : "", alias.output, quoted(out).c_str(),
                          alias.input, quoted(in).c_str());
    TRTET_CHECK_OR_RETURN(out.dtype == in.dtype, kInvalidProgram, "aliased output \"%s\" and input \"%s\" differ in dtype",
                          quoted(out).c_str(), quoted(in).c_str());
    input_of_output[static_cast<std::size_t>(alias.output)] = alias.input;
    output_of_input[static_cast<std::size_t>(alias.input)] = alias.output;
  }
  if (engine.aliases().empty()) return input_of_output;

  const std::vector<std::optional<std::size_t>> output_bytes = output_bytes_at_profile0_max(engine);
  for (const engine::Alias& alias : engine.aliases()) {
    const std::optional<std::size_t> out = output_bytes[static_cast<std::size_t>(alias.output)];
    if (!out) continue;  // checked on each call
    const engine::IoDesc& in_io = engine.io(alias.input);
    const std::optional<std::size_t> in = bytes_of(engine.input_bounds(0, alias.input).max, in_io.dtype);
    TRTET_CHECK_OR_RETURN(in.has_value() && *out <= *in, kInvalidProgram,
                          "aliased output %d (\"%s\") takes %zu bytes with every input at optimization profile 0's "
                          "maximum, more than the %zu of input %d (\"%s\") it is written into",
                          alias.output, quoted(engine.io(alias.output)).c_str(), *out, in.value_or(0), alias.input,
                          quoted(in_io).c_str());
  }
  return input_of_output;
}

Status check_alias_fits(const engine::Engine& engine, int output, int input, std::size_t output_bytes,
                        std::size_t input_capacity) {
  TRTET_CHECK_OR_RETURN(output_bytes <= input_capacity, kInvalidArgument,
                        "output %d (\"%s\") takes %zu bytes and is written in place into input %d (\"%s\"), which holds "
                        "%zu: nothing was run",
                        output, quoted(engine.io(output)).c_str(), output_bytes, input, quoted(engine.io(input)).c_str(),
                        input_capacity);
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
