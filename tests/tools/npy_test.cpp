// The .npy reader and writer: round trips, NumPy's own header layout, and every refusal by name.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/error_match.h"
#include "run/npy.h"

namespace trtet_run {
namespace {

std::vector<std::uint8_t> bytes_of(const std::string& header, const std::vector<std::uint8_t>& data, int major = 1) {
  std::vector<std::uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  const std::size_t n = header.size();
  b.push_back(static_cast<std::uint8_t>(n & 0xff));
  b.push_back(static_cast<std::uint8_t>(n >> 8));
  if (major >= 2) {
    b.push_back(0);
    b.push_back(0);
  }
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

TEST(Npy, RoundTripsFloat32) {
  NpyArray a;
  a.descr = "<f4";
  a.shape = {2, 3};
  const float values[6] = {1, -2, 3.5f, 0, 1e-3f, 42};
  a.data.resize(sizeof(values));
  std::memcpy(a.data.data(), values, sizeof(values));
  auto bytes = format_npy(a);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ((bytes->size() - a.data.size()) % 64, 0u) << "NumPy aligns the header to 64 bytes";
  auto back = parse_npy(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->descr, "<f4");
  EXPECT_EQ(back->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(back->data, a.data);
}

TEST(Npy, RoundTripsThroughAFile) {
  NpyArray a;
  a.descr = "<i8";
  a.shape = {4};
  a.data.assign(32, 7);
  const std::string path = ::testing::TempDir() + "npy_test_round_trip.npy";
  ASSERT_TRUE(write_npy(path, a, /*overwrite=*/true).ok());
  auto back = read_npy(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->shape, std::vector<std::int64_t>{4});
  EXPECT_EQ(back->data, a.data);
}

TEST(Npy, ReadsNumpysOwnHeaderAndScalarsAndVersion2) {
  // As numpy.save writes a 1-d int32 array of 2 elements.
  auto one_d = parse_npy(bytes_of("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }          \n",
                                  {1, 0, 0, 0, 2, 0, 0, 0}));
  ASSERT_TRUE(one_d.ok()) << one_d.status().to_string();
  EXPECT_EQ(one_d->shape, std::vector<std::int64_t>{2});
  auto scalar = parse_npy(bytes_of("{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", {1}));
  ASSERT_TRUE(scalar.ok()) << scalar.status().to_string();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->numel(), 1);
  auto v2 = parse_npy(bytes_of("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1), }\n", {0, 0x3c}, 2));
  ASSERT_TRUE(v2.ok()) << v2.status().to_string();
  EXPECT_EQ(v2->shape, (std::vector<std::int64_t>{1, 1}));
}

struct Bad {
  std::vector<std::uint8_t> bytes;
  const char* says;
};

TEST(Npy, RefusesWhatItCannotReadByName) {
  const std::vector<Bad> cases = {
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}, "magic"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", {0, 0, 0, 0}, 9), "format version 9"},
      {bytes_of("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", {0, 0, 0, 0}), "dtype '>f4'"},
      {bytes_of("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", {0, 0, 0, 0}), "Fortran-order"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", {0, 0, 0, 0}), "needs 8"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, }\n", {0, 0, 0, 0}), "no 'shape'"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }\n", {0, 0, 0, 0}), "shape '(a,)'"},
      {bytes_of("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", {0, 0, 0, 0, 0, 0, 0, 0}), "'<c8'"},
  };
  for (const Bad& c : cases) {
    auto parsed = parse_npy(c.bytes, "case.npy");
    ASSERT_FALSE(parsed.ok()) << c.says;
    EXPECT_EQ(parsed.status().code(), torch_tensorrt::executorch_backend::ErrorCode::kInvalidArgument);
    TRTET_EXPECT_ERROR_SAYS(parsed.status(), c.says);
    TRTET_EXPECT_ERROR_SAYS(parsed.status(), "case.npy");
  }
}

TEST(Npy, AMissingFileIsNotFound) {
  auto read = read_npy("/no/such/file.npy");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), torch_tensorrt::executorch_backend::ErrorCode::kNotFound);
}

TEST(Npy, WritingAMismatchedSizeIsRefused) {
  NpyArray a;
  a.descr = "<f4";
  a.shape = {3};
  a.data.resize(8);
  EXPECT_FALSE(format_npy(a).ok());
  a.descr = "bf16";
  a.data.resize(12);
  EXPECT_FALSE(format_npy(a).ok());
}

// The element count is counted with ex::checked_element_count: a |u1 array of shape
// (281470681808897, 65537) would otherwise "need" 131073 bytes (the product mod 2^64) and be
// accepted with that much data, and the runner would read the shape's real size from it. Refused.
TEST(Npy, AShapeWhoseSizeOverflowsIsRefused) {
  const std::vector<std::uint8_t> data(131073, 0);
  auto parsed = parse_npy(bytes_of("{'descr': '|u1', 'fortran_order': False, 'shape': (281470681808897, 65537), }\n",
                                   data),
                          "overflow.npy");
  ASSERT_FALSE(parsed.ok()) << "accepted " << parsed->data.size() << " bytes for shape (281470681808897, 65537)";
  EXPECT_EQ(parsed.status().code(), torch_tensorrt::executorch_backend::ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(parsed.status(), "more bytes than fit in 64 bits");
  // Also where the count fits in int64 but the bytes do not.
  auto wide = parse_npy(bytes_of("{'descr': '<f8', 'fortran_order': False, 'shape': (1125899906842624, 4096), }\n",
                                 {}),
                        "wide.npy");
  ASSERT_FALSE(wide.ok());
  TRTET_EXPECT_ERROR_SAYS(wide.status(), "more bytes than fit in 64 bits");
  NpyArray a;
  a.descr = "|u1";
  a.shape = {281470681808897, 65537};
  EXPECT_EQ(a.numel(), -1) << "numel is checked";
  a.data.resize(131073);
  EXPECT_FALSE(format_npy(a).ok());
}

TEST(Npy, DataShorterOrLongerThanTheShapeIsRefused) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{7}, std::size_t{9}}) {
    auto parsed = parse_npy(bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n",
                                     std::vector<std::uint8_t>(size, 1)),
                            "short.npy");
    ASSERT_FALSE(parsed.ok()) << size;
    TRTET_EXPECT_ERROR_SAYS(parsed.status(), "needs 8");
  }
}

TEST(Npy, AHeaderPastTheCapIsRefusedBeforeItIsParsed) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  header.append(kMaxNpyHeaderBytes + 1 - header.size(), ' ');
  std::vector<std::uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  const std::size_t n = header.size();
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), 4, 0);
  auto parsed = parse_npy(b, "big-header.npy");
  ASSERT_FALSE(parsed.ok());
  TRTET_EXPECT_ERROR_SAYS(parsed.status(), "a header of 65537 bytes");
}

TEST(Npy, FileTextInMessagesIsEscaped) {
  auto parsed = parse_npy(bytes_of("{'descr': '\x1b[2J\x1b]0;x\x07', 'fortran_order': False, 'shape': (1,), }\n",
                                   {0, 0, 0, 0}),
                          "escape.npy");
  ASSERT_FALSE(parsed.ok());
  TRTET_EXPECT_ERROR_OMITS(parsed, "\x1b");
  TRTET_EXPECT_ERROR_SAYS(parsed.status(), "\\x1b[2J");
}

// read_npy reads only regular files, and no more than the cap (/dev/zero would be read until memory
// ran out).
TEST(Npy, OnlyRegularFilesWithinTheCapAreRead) {
  auto zero = read_npy("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), torch_tensorrt::executorch_backend::ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(zero.status(), "not a regular file");
  auto dir = read_npy("/");
  ASSERT_FALSE(dir.ok());
  NpyArray a;
  a.descr = "<f4";
  a.shape = {16};
  a.data.assign(64, 1);
  const std::string path = ::testing::TempDir() + "npy_test_cap.npy";
  ASSERT_TRUE(write_npy(path, a, /*overwrite=*/true).ok());
  auto capped = read_npy(path, 100);
  ASSERT_FALSE(capped.ok());
  TRTET_EXPECT_ERROR_SAYS(capped.status(), "more than the 100 a .npy input may be");
  EXPECT_TRUE(read_npy(path).ok());
  std::remove(path.c_str());
}

// Outputs are not written through symbolic links, nor over existing files unless asked.
TEST(Npy, WritesRefuseSymlinksAndExistingFilesUnlessAsked) {
  NpyArray a;
  a.descr = "<i1";
  a.shape = {3};
  a.data = {1, 2, 3};
  const std::string dir = ::testing::TempDir();
  const std::string target = dir + "npy_test_target.txt";
  const std::string link = dir + "npy_test_link.npy";
  const std::string fresh = dir + "npy_test_fresh.npy";
  std::remove(target.c_str());
  std::remove(link.c_str());
  std::remove(fresh.c_str());
  {
    std::ofstream out(target);
    out << "precious";
  }
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  for (const bool overwrite : {false, true}) {
    const auto written = write_npy(link, a, overwrite);
    ASSERT_FALSE(written.ok()) << "wrote through a symbolic link (overwrite " << overwrite << ")";
    EXPECT_EQ(written.code(), torch_tensorrt::executorch_backend::ErrorCode::kInvalidArgument);
  }
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "precious");

  ASSERT_TRUE(write_npy(fresh, a).ok());
  const auto again = write_npy(fresh, a);
  ASSERT_FALSE(again.ok()) << "replaced an existing file without being asked";
  TRTET_EXPECT_ERROR_SAYS(again, "--overwrite");
  a.data = {4, 5, 6};
  ASSERT_TRUE(write_npy(fresh, a, /*overwrite=*/true).ok());
  auto back = read_npy(fresh);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data, (std::vector<std::uint8_t>{4, 5, 6}));
  std::remove(link.c_str());
  std::remove(target.c_str());
  std::remove(fresh.c_str());
}

}  // namespace
}  // namespace trtet_run
