// Arrays as a call takes them: read without a copy and without a DLPack round trip where the object
// offers a faster way (the DLPack C exchange API, the buffer protocol, torch's and cupy's own
// attributes), DLPack and __cuda_array_interface__ otherwise; the dtype names and codes between
// them and ExecuTorch (arrays.cpp).
#pragma once

// The nanobind casters the original one translation unit had: every file that converts gets the same.
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace trtet_py {

using ::executorch::aten::ScalarType;
using ::executorch::aten::SizesType;
namespace dl = nb::dlpack;

/// ExecuTorch's rank limit (kTensorDimensionLimit): an array of more dimensions is refused.
constexpr int kMaxDims = 16;

const char* dtype_name(ScalarType t);
dl::dtype dl_of(ScalarType t);
inline std::size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: return 1;
    case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
    case ScalarType::Int: case ScalarType::Float: return 4;
    case ScalarType::Long: case ScalarType::Double: return 8;
    default: return 1;
  }
}
std::string shape_text(const SizesType* sizes, int ndim);
inline std::string shape_text(const std::vector<SizesType>& s) { return shape_text(s.data(), static_cast<int>(s.size())); }

/// How an argument is named in an error ("input 0 (x)"), built only when an error is raised.
struct Where {
  const char* kind = "input";  // "input" or "output"
  std::size_t index = 0;
  const std::string* name = nullptr;
  std::string text() const;
};

/// One tensor argument as the call sees it: its data where it is. `obj` is borrowed: the caller
/// holds the object for as long as the ArrayArg is used (the call's arguments, or a bound call's
/// references).
struct ArrayArg {
  void* data = nullptr;
  ScalarType type = ScalarType::Float;
  int ndim = 0;
  SizesType sizes[kMaxDims] = {};
  bool cuda = false;  // device memory (kDLCUDA, or managed)
  int device = 0;
  PyObject* obj = nullptr;

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(type); }
  std::vector<SizesType> shape() const { return std::vector<SizesType>(sizes, sizes + ndim); }
};

/// Reads `obj` into `out` without copying it; rejects what the delegate cannot take as it is (a
/// non-contiguous array, a device other than the CPU or CUDA, a dtype ExecuTorch has no name for,
/// a read-only array where `writable`). Raises InvalidArgument naming `where`.
void read_array(PyObject* obj, ArrayArg& out, const Where& where, bool writable);

/// Which way read_array reads objects of this type ("exchange-api", "buffer", "torch", "cupy",
/// "dlpack", "cuda-array-interface", or "none"): what the benchmark reports.
const char* array_path(nb::handle obj);

/// Whether types offering the DLPack C exchange API are read through it (the default) or through
/// the next path that fits them (the benchmark compares both); forgets what it knew of types.
void use_exchange_api(bool on);

}  // namespace trtet_py
