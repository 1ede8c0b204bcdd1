// Arrays as a call takes them: numpy, DLPack and __cuda_array_interface__ objects read without a
// copy, and the dtype names and codes between them and ExecuTorch (arrays.cpp).
#pragma once

// The nanobind casters the original one translation unit had: every file that converts gets the same.
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include <string>
#include <vector>

#include "common.h"

namespace trtet_py {

using ::executorch::aten::ScalarType;
using ::executorch::aten::SizesType;
namespace dl = nb::dlpack;

const char* dtype_name(ScalarType t);
dl::dtype dl_of(ScalarType t);
std::string shape_text(const std::vector<SizesType>& s);

/// One tensor argument as the call sees it: its data where it is, the array object kept alive.
struct ArrayArg {
  void* data = nullptr;
  ScalarType type = ScalarType::Float;
  std::vector<SizesType> sizes;
  bool cuda = false;  // device memory (kDLCUDA, or managed)
  int device = 0;
  nb::object keep;
};

/// Reads `obj` (a DLPack / buffer-protocol array through nb::ndarray, else __cuda_array_interface__)
/// without copying it; rejects what the delegate cannot take as it is (a non-contiguous array, a
/// device other than the CPU or CUDA, a dtype ExecuTorch has no name for).
ArrayArg array_arg(nb::handle obj, const std::string& what);

}  // namespace trtet_py
