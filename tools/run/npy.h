// NumPy .npy files: read one array, write one array (format versions 1.0-3.0 read, 1.0 written).
//
// Debian 12 packages no C++ .npy library (no cnpy, no libnpy) and PyPI carries none for C++, so this
// is a minimal reader and writer of the documented format: the magic, a little-endian header length,
// a Python-literal header dict with 'descr', 'fortran_order' and 'shape', then the raw data in C order.
// Only little-endian or byte-sized types and C order are accepted; anything else is refused by name.
#pragma once

#include <cstddef>
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

  /// Product of the shape (1 for a 0-d array), checked (ex::checked_element_count): -1 when it
  /// overflows int64.
  std::int64_t numel() const;
};

/// The byte size of one element of `descr` ("<f4" -> 4), or 0 when not a supported descr.
std::size_t npy_item_size(const std::string& descr);

/// The longest header read (NumPy itself reads at most 10000 bytes by default).
inline constexpr std::size_t kMaxNpyHeaderBytes = 65536;
/// The largest .npy file read_npy() reads unless told otherwise (64 GiB).
inline constexpr std::uint64_t kMaxNpyFileBytes = std::uint64_t{64} << 30;

/// Parses the bytes of a .npy file (untrusted: every size is checked, and the data must be exactly
/// what the shape needs, computed without overflow). kInvalidArgument naming what is wrong (magic,
/// version, a header over kMaxNpyHeaderBytes, big-endian or Fortran-order data, a shape whose byte
/// size overflows, a data size that does not match the shape). Quoted file text is escaped.
ex::Result<NpyArray> parse_npy(const std::vector<std::uint8_t>& bytes, const std::string& name = "<memory>");
/// Reads and parses `path`: kNotFound when it cannot be opened; kInvalidArgument when it is no
/// regular file (a device, a FIFO) or is larger than `max_bytes`. Reads the file's size, no more.
ex::Result<NpyArray> read_npy(const std::string& path, std::uint64_t max_bytes = kMaxNpyFileBytes);

/// The bytes of a .npy (version 1.0) file holding `array`; kInvalidArgument for an unsupported
/// descr or a data size that does not match the shape.
ex::Result<std::vector<std::uint8_t>> format_npy(const NpyArray& array);
/// Writes `size` bytes to the regular file `path` without following a symbolic link there (O_NOFOLLOW)
/// and, unless `overwrite`, without replacing an existing file (O_EXCL): kInvalidArgument for an
/// existing file, a symbolic link or a non-regular file; kInternal when writing fails.
ex::Status write_file(const std::string& path, const void* data, std::size_t size, bool overwrite);
/// Writes `array` to `path` through write_file().
ex::Status write_npy(const std::string& path, const NpyArray& array, bool overwrite = false);

}  // namespace trtet_run
