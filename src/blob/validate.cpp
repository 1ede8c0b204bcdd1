#include "blob/validate.h"

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace torch_tensorrt::executorch_backend::blob {
namespace {

Status check_bindings(const Metadata& metadata, std::unordered_map<std::string, bool>& is_input_by_name) {
  for (size_t i = 0; i < metadata.io_bindings.size(); ++i) {
    const IoBinding& binding = metadata.io_bindings[i];
    TRTET_CHECK_OR_RETURN(!binding.name.empty(), kInvalidProgram, "metadata: io_bindings[%zu].name is empty", i);
    const bool inserted = is_input_by_name.emplace(binding.name, binding.is_input).second;
    TRTET_CHECK_OR_RETURN(inserted, kInvalidProgram, "metadata: io_bindings[%zu].name \"%s\" is a duplicate binding name",
                          i, binding.name.c_str());
    for (size_t d = 0; d < binding.shape.size(); ++d) {
      TRTET_CHECK_OR_RETURN(binding.shape[d] >= -1, kInvalidProgram,
                            "metadata: io_bindings[%zu].shape[%zu] is %lld (a dimension is >= 0, or -1 when dynamic)", i,
                            d, static_cast<long long>(binding.shape[d]));
    }
  }
  return Status::Ok();
}

Status check_aliases(const Metadata& metadata, const std::unordered_map<std::string, bool>& is_input_by_name) {
  std::unordered_set<std::string> aliased_outputs;
  for (size_t i = 0; i < metadata.aliased_io.size(); ++i) {
    const AliasedIo& alias = metadata.aliased_io[i];
    const auto output = is_input_by_name.find(alias.output);
    TRTET_CHECK_OR_RETURN(output != is_input_by_name.end(), kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" names no binding", i, alias.output.c_str());
    TRTET_CHECK_OR_RETURN(!output->second, kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" names an input, not an output", i,
                          alias.output.c_str());
    const auto input = is_input_by_name.find(alias.input);
    TRTET_CHECK_OR_RETURN(input != is_input_by_name.end(), kInvalidProgram,
                          "metadata: aliased_io[%zu].input \"%s\" names no binding", i, alias.input.c_str());
    TRTET_CHECK_OR_RETURN(input->second, kInvalidProgram,
                          "metadata: aliased_io[%zu].input \"%s\" names an output, not an input", i,
                          alias.input.c_str());
    TRTET_CHECK_OR_RETURN(aliased_outputs.insert(alias.output).second, kInvalidProgram,
                          "metadata: aliased_io[%zu].output \"%s\" is aliased twice", i, alias.output.c_str());
  }
  return Status::Ok();
}

}  // namespace

Status validate_metadata(const Metadata& metadata) {
  std::unordered_map<std::string, bool> is_input_by_name;
  TRTET_RETURN_IF_ERROR(check_bindings(metadata, is_input_by_name));
  TRTET_RETURN_IF_ERROR(check_aliases(metadata, is_input_by_name));
  TRTET_CHECK_OR_RETURN(metadata.device_id >= 0 && metadata.device_id <= std::numeric_limits<int32_t>::max(),
                        kInvalidProgram, "metadata: device_id %lld is not a device ordinal (0..2147483647)",
                        static_cast<long long>(metadata.device_id));
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::blob
