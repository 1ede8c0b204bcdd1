// The request-shape rule of a program's tensor (shape_rule.cpp; Note [dynamic shapes]), apart from
// Triton's API so that it is unit-tested on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trtet_triton {

std::string dims_text(const std::vector<std::int64_t>& dims);

// Nothing where a request's `shape` (`rank` dims) is served for a tensor whose program sizes are
// `dims` (its shape, or its bound where `dynamic`) and whose config dims are `config_dims` (-1: any
// size up to the bound; a size: exactly that); else the reason, naming the bound and the first dim
// that breaks it (or the rank given).
std::string check_request_shape(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& config_dims,
                                bool dynamic, const std::int64_t* shape, std::uint32_t rank);

}  // namespace trtet_triton
