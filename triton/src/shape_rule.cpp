#include "shape_rule.h"

namespace trtet_triton {

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string check_request_shape(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& config_dims,
                                const bool dynamic, const std::int64_t* shape, const std::uint32_t rank) {
  const std::vector<std::int64_t> given(shape, shape + rank);
  if (!dynamic) {
    if (given == dims) return {};
    return "has shape " + dims_text(given) + "; the program takes " + dims_text(dims);
  }
  const bool configured = config_dims.size() == dims.size();
  bool ok = rank == dims.size();
  for (std::size_t d = 0; ok && d < rank; ++d) {
    const bool fixed = configured && config_dims[d] >= 0;
    ok = given[d] >= 0 && (fixed ? given[d] == config_dims[d] : given[d] <= dims[d]);
  }
  if (ok) return {};
  std::vector<std::int64_t> bound = dims;
  for (std::size_t d = 0; configured && d < bound.size(); ++d) {
    if (config_dims[d] >= 0) bound[d] = config_dims[d];
  }
  return "has shape " + dims_text(given) + "; the program takes " + std::to_string(dims.size()) + " dims within " +
         dims_text(bound) + " (config dims " + dims_text(config_dims) + ")";
}

}  // namespace trtet_triton
