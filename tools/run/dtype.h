// ExecuTorch dtypes as trtet-run needs them: the .npy spelling, and random values of each.
#pragma once

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include <cstdint>
#include <random>
#include <string>

namespace trtet_run {

using ScalarType = ::executorch::aten::ScalarType;

/// The .npy descr of `type` ("<f4" for Float), or "" where NumPy has none (BFloat16, complex, ...).
std::string npy_descr(ScalarType type);
/// The dtype whose .npy descr is `descr`; false when none matches.
bool dtype_of_npy(const std::string& descr, ScalarType& type);
/// "float32", "int64", ...: the name users know.
std::string dtype_name(ScalarType type);
/// Bytes per element; 0 for a dtype trtet-run cannot fill.
std::size_t dtype_size(ScalarType type);

/// Fills `count` elements of `type` at `data` (host memory): floating types uniform in [-1, 1),
/// integers uniform in [0, 16), bools 0 or 1. False for a dtype it cannot fill.
bool fill_random(ScalarType type, void* data, std::size_t count, std::mt19937& rng);

}  // namespace trtet_run
