// NumPy .npy files: read one array, write one array (format versions 1.0-3.0 read, 1.0 written).
//
// Debian 12 packages no C++ .npy library (no cnpy, no libnpy) and PyPI carries none for C++, so this
// is a minimal reader and writer of the documented format: the magic, a little-endian header length,
// a Python-literal header dict with 'descr', 'fortran_order' and 'shape', then the raw data in C order.
// Only little-endian or byte-sized types and C order are accepted; anything else is refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace trtet_run {

namespace ex = torch_tensorrt::executorch_backend;

/// One array: its dtype as NumPy spells it ("<f4", "|b1", ...), shape, and C-order bytes.
struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;

  /// Product of the shape (1 for a 0-d array).
  std::int64_t numel() const;
};

/// The byte size of one element of `descr` ("<f4" -> 4), or 0 when not a supported descr.
std::size_t npy_item_size(const std::string& descr);

/// Parses the bytes of a .npy file. kInvalidArgument naming what is wrong (magic, version, header,
/// big-endian or Fortran-order data, a data size that does not match the shape).
ex::Result<NpyArray> parse_npy(const std::vector<std::uint8_t>& bytes, const std::string& name = "<memory>");
/// Reads and parses `path`; kNotFound when it cannot be read.
ex::Result<NpyArray> read_npy(const std::string& path);

/// The bytes of a .npy (version 1.0) file holding `array`; kInvalidArgument for an unsupported
/// descr or a data size that does not match the shape.
ex::Result<std::vector<std::uint8_t>> format_npy(const NpyArray& array);
/// Writes `array` to `path`; kInternal when the file cannot be written.
ex::Status write_npy(const std::string& path, const NpyArray& array);

}  // namespace trtet_run
