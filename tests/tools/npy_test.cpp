// The .npy reader and writer: round trips, NumPy's own header layout, and every refusal by name.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "green/contains.h"
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
  ASSERT_TRUE(write_npy(path, a).ok());
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
    EXPECT_CONTAINS(parsed.status().message(), c.says);
    EXPECT_CONTAINS(parsed.status().message(), "case.npy");
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

}  // namespace
}  // namespace trtet_run
