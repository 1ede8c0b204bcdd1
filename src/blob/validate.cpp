#include "blob/validate.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/escape.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

/// A name from the program, quoted in a message: control characters escaped (a name may hold any
/// character; a message must not carry terminal control sequences), at most 128 bytes.
std::string quoted(const std::string& name) { return escape_for_message(name, 128); }

Status check_bindings(const Metadata& metadata, std::unordered_map<std::string, size_t>& index_by_name) {
  for (size_t i = 0; i < metadata.io_bindings.size(); ++i) {
    const IoBinding& binding = metadata.io_bindings[i];
    TRTET_CHECK_OR_RETURN(!binding.name.empty(), kInvalidProgram, "metadata: io_bindings[%zu].name is empty", i);
    const bool inserted = index_by_name.emplace(binding.name, i).second;
    TRTET_CHECK_OR_RETURN(inserted, kInvalidProgram, "metadata: io_bindings[%zu].name \"%s\" is a duplicate binding name",
                          i, quoted(binding.name).c_str());
    for (size_t d = 0; d < binding.shape.size(); ++d) {
      TRTET_CHECK_OR_RETURN(binding.shape[d] >= -1, kInvalidProgram,
                            "metadata: io_bindings[%zu].shape[%zu] is %lld (a dimension is >= 0, or -1 when dynamic)", i,
                            d, static_cast<long long>(binding.shape[d]));
    }
  }
  return Status::Ok();
}

/// The element count of a fully static shape listed in the metadata; nullopt when the shape is
/// absent ([]: Torch-TensorRT writes none), has a dynamic dimension, or overflows.
std::optional<int64_t> static_count(const std::vector<int64_t>& shape) {
  if (shape.empty()) return std::nullopt;
  int64_t count = 1;
  for (const int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
    if (__builtin_mul_overflow(count, d, &count)) return std::nullopt;
  }
  return count;
}

// An aliased output is written in place into its input's memory: at most one output per input,
// and, where the metadata gives both dtypes and static shapes, the same dtype and an output no
// larger than the input. The delegate checks the engine's own shapes again (session/aliases.h).
Status check_aliases(const Metadata& metadata, const std::unordered_map<std::string, size_t>& index_by_name) {
  std::unordered_set<std::string> aliased_outputs;
  std::unordered_map<std::string, size_t> alias_of_input;
  for (size_t i = 0; i < metadata.aliased_io.size(); ++i) {
    const AliasedIo& alias = metadata.aliased_io[i];
    const auto output = index_by_name.find(alias.output);
    TRTET_CHECK_OR_RETURN(output != index_by_name.end(), kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" names no binding", i, quoted(alias.output).c_str());
    const IoBinding& out = metadata.io_bindings[output->second];
    TRTET_CHECK_OR_RETURN(!out.is_input, kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" names an input, not an output", i,
                          quoted(alias.output).c_str());
    const auto input = index_by_name.find(alias.input);
    TRTET_CHECK_OR_RETURN(input != index_by_name.end(), kInvalidProgram,
                          "metadata: aliased_io[%zu].input \"%s\" names no binding", i, quoted(alias.input).c_str());
    const IoBinding& in = metadata.io_bindings[input->second];
    TRTET_CHECK_OR_RETURN(in.is_input, kInvalidProgram,
                          "metadata: aliased_io[%zu].input \"%s\" names an output, not an input", i,
                          quoted(alias.input).c_str());
    TRTET_CHECK_OR_RETURN(aliased_outputs.insert(alias.output).second, kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" is aliased twice", i, quoted(alias.output).c_str());
    const auto [first, inserted] = alias_of_input.emplace(alias.input, i);
    TRTET_CHECK_OR_RETURN(inserted, kInvalidProgram,
                          "metadata: aliased_io[%zu] and aliased_io[%zu] both write into input \"%s\" (an input takes "
                          "at most one aliased output)",
                          first->second, i, quoted(alias.input).c_str());
    TRTET_CHECK_OR_RETURN(out.dtype.empty() || in.dtype.empty() || out.dtype == in.dtype, kInvalidProgram,
                          "metadata: aliased_io[%zu]: output \"%s\" is %s, its input \"%s\" %s (an aliased output "
                          "has its input's dtype)",
                          i, quoted(alias.output).c_str(), quoted(out.dtype).c_str(), quoted(alias.input).c_str(),
                          quoted(in.dtype).c_str());
    const std::optional<int64_t> out_count = static_count(out.shape);
    const std::optional<int64_t> in_count = static_count(in.shape);
    TRTET_CHECK_OR_RETURN(!out_count || !in_count || out.dtype != in.dtype || *out_count <= *in_count,
                          kInvalidProgram,
                          "metadata: aliased_io[%zu]: output \"%s\" has %lld elements, more than the %lld of input "
                          "\"%s\" it is written into",
                          i, quoted(alias.output).c_str(), static_cast<long long>(out_count.value_or(0)),
                          static_cast<long long>(in_count.value_or(0)), quoted(alias.input).c_str());
  }
  return Status::Ok();
}

}  // namespace

Status validate_metadata(const Metadata& metadata) {
  std::unordered_map<std::string, size_t> index_by_name;
  TRTET_RETURN_IF_ERROR(check_bindings(metadata, index_by_name));
  TRTET_RETURN_IF_ERROR(check_aliases(metadata, index_by_name));
  TRTET_CHECK_OR_RETURN(metadata.device_id >= 0 && metadata.device_id <= std::numeric_limits<int32_t>::max(),
                        kInvalidProgram, "metadata: device_id %lld is not a device ordinal (0..2147483647)",
                        static_cast<long long>(metadata.device_id));
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::blob
