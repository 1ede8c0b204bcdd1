// write_blob -> parse_blob -> write_blob over many structures: the parsed metadata equals what was
// written, the engine view holds the engine bytes, and writing the parsed metadata again gives the
// same bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "blob/parse.h"
#include "blob/write.h"
#include "blob_bytes.h"
#include "common/gpu.h"
#include "common/random.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

using trtet_test::blob_bytes::binding;

struct Structure {
  std::string name;
  Metadata metadata;
  std::string engine;
};

std::ostream& operator<<(std::ostream& os, const Structure& s) { return os << s.name; }

std::string pattern(size_t size) {
  std::string bytes(size, '\0');
  trtet_test::fill_random_bytes(bytes.data(), size, 12345);
  return bytes;
}

Metadata pairs(size_t count, AliasKind kind, bool aliased) {
  Metadata m;
  for (size_t i = 0; i < count; ++i) {
    m.io_bindings.push_back(binding("cache_in_" + std::to_string(i), true, "float16", {1, 8, -1, 64}));
  }
  for (size_t i = 0; i < count; ++i) {
    m.io_bindings.push_back(binding("cache_out_" + std::to_string(i), false, "float16", {1, 8, -1, 64}));
    if (aliased) m.aliased_io.push_back({"cache_out_" + std::to_string(i), "cache_in_" + std::to_string(i), kind});
  }
  return m;
}

std::vector<Structure> structures() {
  std::vector<Structure> all;
  all.push_back({"EmptyMetadata", Metadata{}, "E"});
  all.push_back({"EmptyMetadataEmptyEngine", Metadata{}, ""});
  {
    Metadata m;
    m.io_bindings = {binding("x", true)};
    all.push_back({"OneInput", m, "engine"});
  }
  {
    Metadata m;
    m.io_bindings = {binding("y", false)};
    all.push_back({"OneOutput", m, "engine"});
  }
  {
    Metadata m;
    m.io_bindings = {binding("x", true), binding("y", false)};
    m.hardware_compatible = true;
    m.device_id = 1;
    all.push_back({"TorchTensorRtTypical", m, "engine-bytes"});
  }
  {
    Metadata m;
    for (int i = 0; i < 100; ++i) m.io_bindings.push_back(binding("t" + std::to_string(i), i % 3 != 0));
    all.push_back({"HundredBindings", m, pattern(1000)});
  }
  {
    Metadata m;
    m.io_bindings = {binding("img", true, "float32", {-1, 3, -1, -1}), binding("logits", false, "float32", {-1, 1000}),
                     binding("scalar", false, "int64", {}), binding("zero", false, "bool", {0, 4})};
    all.push_back({"DynamicAndEmptyShapes", m, "E"});
  }
  {
    Metadata m;
    const char* dtypes[] = {"float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "fp8"};
    for (const char* d : dtypes) m.io_bindings.push_back(binding(std::string("in_") + d, true, d, {2, 2}));
    all.push_back({"Dtypes", m, "E"});
  }
  {
    Metadata m;
    m.hardware_compatible = true;
    m.device_id = 3;
    all.push_back({"HardwareCompatibleDevice3", m, "E"});
  }
  {
    Metadata m;
    m.device_id = std::numeric_limits<int32_t>::max();
    m.io_bindings = {binding("huge_dims", true, "int8", {std::numeric_limits<int64_t>::max(), 1})};
    all.push_back({"ExtremeIntegers", m, "E"});
  }
  {
    Metadata m;
    std::string b64;
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < 10000; ++i) b64 += alphabet[(i * 7) % alphabet.size()];
    m.serialized_metadata = b64 + "==";
    all.push_back({"LongSerializedMetadata", m, "E"});
  }
  {
    Metadata m;
    m.target_platform = "linux_x86_64";
    m.serialized_metadata = R"({"nested":"json","list":[1,2]})";
    all.push_back({"PlatformAndJsonInAString", m, "E"});
  }
  all.push_back({"OneKvCacheAlias", pairs(1, AliasKind::kKvCacheUpdate, true), "E"});
  all.push_back({"OneUserAlias", pairs(1, AliasKind::kUser, true), "E"});
  {
    Metadata m = pairs(2, AliasKind::kKvCacheUpdate, true);
    m.aliased_io[1].kind = AliasKind::kUser;
    all.push_back({"MixedAliasKinds", m, "E"});
  }
  all.push_back({"ThirtyTwoLayersOfKvCache", pairs(32, AliasKind::kKvCacheUpdate, true), pattern(4096)});
  all.push_back({"PairsWithoutAliases", pairs(4, AliasKind::kKvCacheUpdate, false), "E"});
  {
    Metadata m;
    m.io_bindings = {binding("entr\xC3\xA9" "e", true), binding("\xE8\xBE\x93\xE5\x87\xBA", false),
                     binding("\xF0\x9F\x98\x80_emoji", false), binding("\xD0\xBA\xD1\x8D\xD1\x88", true)};
    m.aliased_io = {{"\xE8\xBE\x93\xE5\x87\xBA", "entr\xC3\xA9" "e", AliasKind::kUser}};
    m.target_platform = "\xE2\x82\xAC";
    all.push_back({"UnicodeNames", m, "E"});
  }
  {
    Metadata m;
    m.io_bindings = {binding("q\"uote", true), binding("back\\slash", true), binding("new\nline\ttab", false),
                     binding(std::string("nul\0byte", 8), false), binding("del\x7f", false), binding("slash/", true)};
    all.push_back({"EscapedCharacters", m, "E"});
  }
  {
    Metadata m;
    m.io_bindings = {binding("aliased_io", true), binding("io_bindings", false), binding("device_id", false)};
    m.aliased_io = {{"io_bindings", "aliased_io", AliasKind::kKvCacheUpdate}};
    all.push_back({"NamesThatLookLikeKeys", m, "E"});
  }
  {
    Metadata m;
    m.io_bindings = {binding(std::string(4096, 'n'), true)};
    all.push_back({"LongName", m, "E"});
  }
  {
    Metadata m = pairs(2, AliasKind::kUser, true);
    m.hardware_compatible = true;
    m.device_id = 1;
    m.target_platform = "linux_aarch64";
    all.push_back({"LargeEngine16MiB", m, pattern(16u << 20)});
  }
  for (size_t size : {1, 15, 16, 17, 31, 32, 33}) {
    Metadata m;
    m.io_bindings = {binding("x", true)};
    all.push_back({"EngineOf" + std::to_string(size) + "Bytes", m, pattern(size)});
  }
  for (size_t pad = 0; pad < 16; ++pad) {
    Metadata m;
    m.target_platform = std::string(pad, 'p');  // every padding length 0..15
    all.push_back({"Padding" + std::to_string(pad), m, "E"});
  }
  return all;
}

class BlobRoundTrip : public ::testing::TestWithParam<Structure> {};

TEST_P(BlobRoundTrip, WriteParseWrite) {
  const Structure& s = GetParam();
  const std::vector<uint8_t> first = write_blob(s.metadata, s.engine.data(), s.engine.size());
  ASSERT_FALSE(first.empty());
  auto parsed = parse_blob(first.data(), first.size());
  TRTET_ASSERT_OK(parsed);
  EXPECT_TRUE(parsed->metadata == s.metadata);
  EXPECT_EQ(parsed->header.magic, s.metadata.aliased_io.empty() ? kMagicV1 : kMagicV2);
  EXPECT_EQ(parsed->header.engine_offset % kEngineAlignment, 0u);
  EXPECT_EQ(parsed->header.engine_offset + parsed->engine_size, first.size());
  ASSERT_EQ(parsed->engine_size, s.engine.size());
  EXPECT_TRUE(std::equal(s.engine.begin(), s.engine.end(), reinterpret_cast<const char*>(parsed->engine)));
  const std::vector<uint8_t> second = write_blob(parsed->metadata, parsed->engine, parsed->engine_size);
  EXPECT_TRUE(second == first);
}

INSTANTIATE_TEST_SUITE_P(Structures, BlobRoundTrip, ::testing::ValuesIn(structures()),
                         [](const ::testing::TestParamInfo<Structure>& info) { return info.param.name; });

TEST(BlobRoundTripCount, AtLeastTwentyStructures) { EXPECT_GE(structures().size(), 20u); }

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::blob
