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
  // The first thing the request breaks, named after the bound: "within [8, 64]" alone reads as a
  // range to some, so the reason says which dim is off and by what rule.
  std::string broken;
  if (rank != dims.size()) {
    broken = std::to_string(rank) + " dims given";
  }
  for (std::size_t d = 0; broken.empty() && d < rank; ++d) {
    const bool fixed = configured && config_dims[d] >= 0;
    // The reason is text only for the dim that breaks the rule: a served request builds no string.
    const char* rule = nullptr;
    if (given[d] < 0) {
      rule = ", negative";
    } else if (fixed && given[d] != config_dims[d]) {
      rule = " where the config fixes ";
    } else if (!fixed && given[d] > dims[d]) {
      rule = ", above its bound ";
    } else {
      continue;
    }
    broken = "dim " + std::to_string(d) + " is " + std::to_string(given[d]) + rule;
    if (given[d] >= 0) broken += std::to_string(fixed ? config_dims[d] : dims[d]);
  }
  if (broken.empty()) return {};
  std::vector<std::int64_t> bound = dims;
  for (std::size_t d = 0; configured && d < bound.size(); ++d) {
    if (config_dims[d] >= 0) bound[d] = config_dims[d];
  }
  return "has shape " + dims_text(given) + "; the program takes " + std::to_string(dims.size()) + " dims within " +
         dims_text(bound) + " (config dims " + dims_text(config_dims) + "): " + broken;
}

}  // namespace trtet_triton
