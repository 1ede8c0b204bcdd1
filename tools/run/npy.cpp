#include "run/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>

#include "common/escape.h"
#include "engine/types.h"

namespace trtet_run {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

// The supported descrs: little-endian (or byte-sized, '|') numbers and bools.
struct Descr {
  const char* text;
  std::size_t size;
};
constexpr Descr kDescrs[] = {{"<f4", 4}, {"<f8", 8}, {"<f2", 2}, {"<i1", 1}, {"|i1", 1}, {"<u1", 1}, {"|u1", 1},
                             {"<i2", 2}, {"<i4", 4}, {"<i8", 8}, {"|b1", 1}, {"<b1", 1}};

/// The bytes a shape of `descr` items takes (checked_element_count × item size), or nullopt when that
/// does not fit in 64 bits.
std::optional<std::size_t> data_bytes(const std::vector<std::int64_t>& shape, std::size_t item) {
  const std::optional<std::int64_t> count = ex::checked_element_count(shape.data(), shape.size());
  if (!count) return std::nullopt;
  return ex::checked_byte_count(*count, item);
}

/// The file's text quoted in a message: control characters escaped, at most 64 bytes.
std::string quoted(const std::string& text) { return ex::escape_for_message(text, 64); }

ex::Status bad(const std::string& name, const std::string& what) {
  return ex::make_error(ex::ErrorCode::kInvalidArgument, "%s: not a .npy file this reader takes: %s", name.c_str(),
                        what.c_str());
}

// The value text after `'key':` in a header dict, up to the next top-level ',' or '}'.
bool dict_value(const std::string& header, const std::string& key, std::string& value) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  std::size_t at = std::string::npos;
  for (const std::string& q : quoted) {
    at = header.find(q);
    if (at != std::string::npos) {
      at += q.size();
      break;
    }
  }
  if (at == std::string::npos) return false;
  at = header.find(':', at);
  if (at == std::string::npos) return false;
  ++at;
  int depth = 0;
  std::size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  value = header.substr(at, end - at);
  // trim blanks and quotes
  const auto first = value.find_first_not_of(" \t'\"");
  const auto last = value.find_last_not_of(" \t'\"");
  value = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
  return true;
}

bool parse_shape(const std::string& text, std::vector<std::int64_t>& shape) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return false;
  std::string inner = text.substr(1, text.size() - 2);
  std::size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == ',')) ++i;
    if (i >= inner.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(inner[i]))) return false;
    std::int64_t value = 0;
    while (i < inner.size() && std::isdigit(static_cast<unsigned char>(inner[i]))) {
      if (value > (std::int64_t{1} << 50)) return false;
      value = value * 10 + (inner[i] - '0');
      ++i;
    }
    while (i < inner.size() && inner[i] == 'L') ++i;  // Python 2 longs
    shape.push_back(value);
  }
  return true;
}

}  // namespace

std::int64_t NpyArray::numel() const {
  return ex::checked_element_count(shape.data(), shape.size()).value_or(-1);
}

std::size_t npy_item_size(const std::string& descr) {
  for (const Descr& d : kDescrs) {
    if (descr == d.text) return d.size;
  }
  return 0;
}

ex::Result<NpyArray> parse_npy(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return bad(name, "no \\x93NUMPY magic");
  }
  const unsigned major = bytes[6];
  std::size_t header_len = 0;
  std::size_t header_at = 0;
  if (major == 1) {
    header_len = bytes[8] | (static_cast<std::size_t>(bytes[9]) << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad(name, "truncated header");
    header_len = bytes[8] | (static_cast<std::size_t>(bytes[9]) << 8) | (static_cast<std::size_t>(bytes[10]) << 16) |
                 (static_cast<std::size_t>(bytes[11]) << 24);
    header_at = 12;
  } else {
    return bad(name, "format version " + std::to_string(major) + " (1, 2 and 3 are known)");
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return bad(name, "a header of " + std::to_string(header_len) + " bytes (at most " +
                         std::to_string(kMaxNpyHeaderBytes) + " are read)");
  }
  if (header_at + header_len > bytes.size()) return bad(name, "truncated header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + header_at), header_len);

  NpyArray array;
  std::string fortran, shape;
  if (!dict_value(header, "descr", array.descr)) return bad(name, "no 'descr' in the header");
  if (!dict_value(header, "fortran_order", fortran)) return bad(name, "no 'fortran_order' in the header");
  if (!dict_value(header, "shape", shape)) return bad(name, "no 'shape' in the header");
  if (fortran != "False") return bad(name, "Fortran-order data (save it with np.ascontiguousarray)");
  const std::size_t item = npy_item_size(array.descr);
  if (item == 0) {
    return bad(name, "dtype '" + quoted(array.descr) +
                         "' (little-endian f2/f4/f8, i1/i2/i4/i8, u1 and b1 are read; bfloat16 has no .npy dtype)");
  }
  if (!parse_shape(shape, array.shape)) return bad(name, "shape '" + quoted(shape) + "'");
  const std::size_t data_at = header_at + header_len;
  // Checked: a shape whose byte size overflows must not wrap around to the file's data size.
  const std::optional<std::size_t> expected = data_bytes(array.shape, item);
  if (!expected) {
    return bad(name, "shape " + quoted(shape) + " of " + array.descr + " has more bytes than fit in 64 bits");
  }
  if (bytes.size() - data_at != *expected) {
    return bad(name, "the data is " + std::to_string(bytes.size() - data_at) + " bytes where shape " + quoted(shape) +
                         " of " + array.descr + " needs " + std::to_string(*expected));
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at), bytes.end());
  return array;
}

ex::Result<NpyArray> read_npy(const std::string& path, std::uint64_t max_bytes) {
  // A regular file of known size, read exactly: a device (/dev/zero), a FIFO or a file past the cap
  // is refused before anything is read.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ex::make_error(ex::ErrorCode::kNotFound, "cannot read %s: %s", path.c_str(), std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return ex::make_error(ex::ErrorCode::kNotFound, "cannot read %s: %s", path.c_str(), std::strerror(errno));
  }
  TRTET_CHECK_OR_RETURN(S_ISREG(info.st_mode), kInvalidArgument, "%s is not a regular file (a .npy input must be one)",
                        path.c_str());
  const auto size = static_cast<std::uint64_t>(info.st_size);
  TRTET_CHECK_OR_RETURN(size <= max_bytes, kInvalidArgument, "%s is %llu bytes, more than the %llu a .npy input may be",
                        path.c_str(), static_cast<unsigned long long>(size), static_cast<unsigned long long>(max_bytes));
  std::vector<std::uint8_t> bytes;
  try {
    bytes.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    return ex::make_error(ex::ErrorCode::kMemoryAllocationFailed, "no memory to read %s (%llu bytes)", path.c_str(),
                          static_cast<unsigned long long>(size));
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return ex::make_error(ex::ErrorCode::kInvalidArgument, "%s: read %zu of its %llu bytes (%s)", path.c_str(), done,
                            static_cast<unsigned long long>(size), got < 0 ? std::strerror(errno) : "it shrank");
    }
    done += static_cast<std::size_t>(got);
  }
  return parse_npy(bytes, path);
}

ex::Result<std::vector<std::uint8_t>> format_npy(const NpyArray& array) {
  const std::size_t item = npy_item_size(array.descr);
  TRTET_CHECK_OR_RETURN(item != 0, kInvalidArgument, "cannot write dtype '%s' to .npy", array.descr.c_str());
  const std::optional<std::size_t> expected = data_bytes(array.shape, item);
  TRTET_CHECK_OR_RETURN(expected.has_value() && array.data.size() == *expected, kInvalidArgument,
                        "%zu data bytes do not match the shape (%lld elements of %zu bytes)", array.data.size(),
                        static_cast<long long>(array.numel()), item);
  std::string shape = "(";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    shape += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size()) shape += ",";
    if (i + 1 < array.shape.size()) shape += " ";
  }
  shape += ")";
  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
  const std::size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::vector<std::uint8_t> bytes(kMagic, kMagic + kMagicSize);
  bytes.push_back(1);
  bytes.push_back(0);
  bytes.push_back(static_cast<std::uint8_t>(header.size() & 0xff));
  bytes.push_back(static_cast<std::uint8_t>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), array.data.begin(), array.data.end());
  return bytes;
}

ex::Status write_file(const std::string& path, const void* data, std::size_t size, bool overwrite) {
  // O_NOFOLLOW: a symlink planted at `path` is refused, never followed. Without `overwrite`, O_EXCL
  // refuses any existing file; with it, only a regular file is replaced. O_NONBLOCK: a FIFO without a
  // reader fails at once instead of blocking (and is refused as no regular file otherwise).
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (overwrite ? 0 : O_EXCL);
  const int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int error = errno;
    if (error == EEXIST) {
      return ex::make_error(ex::ErrorCode::kInvalidArgument, "%s exists; trtet-run does not overwrite files unless asked "
                            "(--overwrite)", path.c_str());
    }
    if (error == ELOOP) {
      return ex::make_error(ex::ErrorCode::kInvalidArgument, "%s is a symbolic link, which trtet-run does not write "
                            "through", path.c_str());
    }
    return ex::make_error(ex::ErrorCode::kInternal, "cannot write %s: %s", path.c_str(), std::strerror(error));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat info {};
  TRTET_CHECK_OR_RETURN(fstat(fd, &info) == 0 && S_ISREG(info.st_mode), kInvalidArgument,
                        "%s is not a regular file; trtet-run writes only regular files", path.c_str());
  TRTET_CHECK_OR_RETURN(ftruncate(fd, 0) == 0, kInternal, "cannot truncate %s: %s", path.c_str(), std::strerror(errno));
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t wrote = write(fd, bytes + done, size - done);
    if (wrote < 0 && errno == EINTR) continue;
    TRTET_CHECK_OR_RETURN(wrote > 0, kInternal, "cannot write %s: %s", path.c_str(),
                          wrote < 0 ? std::strerror(errno) : "no progress");
    done += static_cast<std::size_t>(wrote);
  }
  return ex::Status::Ok();
}

ex::Status write_npy(const std::string& path, const NpyArray& array, bool overwrite) {
  TRTET_ASSIGN_OR_RETURN(const std::vector<std::uint8_t> bytes, format_npy(array));
  return write_file(path, bytes.data(), bytes.size(), overwrite);
}

}  // namespace trtet_run
