// blob/parse.h: what parse_blob accepts (defaults, old blobs, unknown keys) and the catalogue of
// malformed blobs it rejects, each with its error code and the check named in the message.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "blob/parse.h"
#include "blob_bytes.h"
#include "common/error_match.h"
#include "common/gpu.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

using namespace trtet_test::blob_bytes;  // Bytes, make_blob, set_u32, set_u64

// A valid metadata document with one input and one output, as Torch-TensorRT writes it.
constexpr char kJson[] =
    R"({"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true},)"
    R"({"name":"y","dtype":"","shape":[],"is_input":false}],"aliased_io":[],)"
    R"("hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""})";

Result<ParsedBlob> parse(const Bytes& blob) { return parse_blob(blob.data(), blob.size()); }

/// A blob whose metadata is `io_json` (the io_bindings array) and `alias_json` (aliased_io).
Bytes with_io(const std::string& io_json, const std::string& alias_json = "[]",
              std::array<char, 4> magic = kMagicV2) {
  return make_blob(R"({"io_bindings":)" + io_json + R"(,"aliased_io":)" + alias_json + "}", "ENGINE", magic);
}

constexpr char kTwoPairs[] =
    R"([{"name":"in_k","is_input":true},{"name":"out_k","is_input":false},)"
    R"({"name":"in_u","is_input":true},{"name":"out_u","is_input":false}])";

// ---- accepted ---------------------------------------------------------------------------------

TEST(BlobParse, ReadsHeaderMetadataAndEngineView) {
  const Bytes blob = make_blob(kJson, "engine-bytes");
  auto parsed = parse(blob);
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->header.magic, kMagicV1);
  EXPECT_EQ(parsed->header.metadata_offset, kHeaderSize);
  EXPECT_EQ(parsed->header.metadata_size, sizeof(kJson) - 1);
  EXPECT_EQ(parsed->header.engine_offset % kEngineAlignment, 0u);
  EXPECT_EQ(parsed->header.engine_size, 12u);
  EXPECT_EQ(parsed->header.reserved, kReserved);
  EXPECT_EQ(parsed->engine, blob.data() + parsed->header.engine_offset);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(parsed->engine), parsed->engine_size), "engine-bytes");
  ASSERT_EQ(parsed->metadata.io_bindings.size(), 2u);
  EXPECT_EQ(parsed->metadata.io_bindings[0].name, "x");
  EXPECT_TRUE(parsed->metadata.io_bindings[0].is_input);
  EXPECT_EQ(parsed->metadata.io_bindings[1].name, "y");
  EXPECT_FALSE(parsed->metadata.io_bindings[1].is_input);
}

TEST(BlobParse, EmptyObjectTakesTheWritersDefaults) {
  auto parsed = parse(make_blob("{}", "E"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata, Metadata{});
}

TEST(BlobParse, BlobWithoutAliasedIoKeyFromBeforeAliasing) {
  auto parsed = parse(make_blob(
      R"({"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true}],"hardware_compatible":true,)"
      R"("device_id":2,"serialized_metadata":"meta","target_platform":"linux"})",
      "E"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_TRUE(parsed->metadata.aliased_io.empty());
  EXPECT_TRUE(parsed->metadata.hardware_compatible);
  EXPECT_EQ(parsed->metadata.device_id, 2);
  EXPECT_EQ(parsed->metadata.serialized_metadata, "meta");
  EXPECT_EQ(parsed->metadata.target_platform, "linux");
}

TEST(BlobParse, BindingDefaultsAreTheWriters) {
  auto parsed = parse(with_io(R"([{"name":"only"}])"));
  TRTET_ASSERT_OK(parsed);
  const IoBinding& b = parsed->metadata.io_bindings.at(0);
  EXPECT_EQ(b.dtype, "");
  EXPECT_TRUE(b.shape.empty());
  EXPECT_TRUE(b.is_input);  // TensorRTIOBinding.is_input defaults to True
}

TEST(BlobParse, MissingAliasKindMeansKvCacheUpdate) {
  auto parsed = parse(with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k"},{"output":"out_u","input":"in_u","kind":"user"}])"));
  TRTET_ASSERT_OK(parsed);
  ASSERT_EQ(parsed->metadata.aliased_io.size(), 2u);
  EXPECT_EQ(parsed->metadata.aliased_io[0].kind, AliasKind::kKvCacheUpdate);
  EXPECT_EQ(parsed->metadata.aliased_io[1].kind, AliasKind::kUser);
  EXPECT_EQ(parsed->metadata.aliased_io[1].output, "out_u");
  EXPECT_EQ(parsed->metadata.aliased_io[1].input, "in_u");
}

TEST(BlobParse, UnknownKeysAreIgnored) {
  auto parsed = parse(make_blob(
      R"({"future":{"a":[1,2]},"io_bindings":[{"name":"x","layout":"nchw"}],)"
      R"("aliased_io":[],"device_id":0,"extra":null})",
      "E"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata.io_bindings.at(0).name, "x");
}

TEST(BlobParse, WhitespaceAndKeyOrderDoNotMatter) {
  auto parsed = parse(make_blob(
      "{\n  \"device_id\" : 3,\n  \"io_bindings\" : [ { \"is_input\" : false , \"name\" : \"y\" } ]\n}\n", "E"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata.device_id, 3);
  EXPECT_FALSE(parsed->metadata.io_bindings.at(0).is_input);
}

TEST(BlobParse, EscapedUnicodeNamesDecodeToUtf8) {
  auto parsed = parse(with_io(R"([{"name":"k\u00e9\ud83d\ude00","is_input":true},{"name":"\u4e2d","is_input":false}])"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata.io_bindings.at(0).name, "k\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(parsed->metadata.io_bindings.at(1).name, "\xE4\xB8\xAD");
}

TEST(BlobParse, Tr02WithoutAliasesIsAccepted) { TRTET_EXPECT_OK(parse(make_blob(kJson, "E", kMagicV2))); }

TEST(BlobParse, ReservedBytesAndPaddingAreNotChecked) {
  Bytes blob = make_blob(kJson, "E");
  for (size_t i = kReservedField; i < kHeaderSize; ++i) blob[i] = 0xAB;
  blob[kHeaderSize + sizeof(kJson) - 1] = 0xCD;  // first padding byte
  auto parsed = parse(blob);
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->header.reserved[0], 0xAB);
}

TEST(BlobParse, GapsBetweenSectionsAreAllowed) {
  // Metadata at 48, engine at 512, bytes between them unused.
  Bytes blob(512, 0);
  const Bytes good = make_blob(kJson, "");
  std::copy(good.begin(), good.begin() + kHeaderSize, blob.begin());
  std::copy(kJson, kJson + sizeof(kJson) - 1, blob.begin() + 48);
  blob.insert(blob.end(), {'E', 'N', 'G'});
  set_u32(blob, kMetadataOffsetField, 48);
  set_u32(blob, kEngineOffsetField, 512);
  set_u64(blob, kEngineSizeField, 3);
  auto parsed = parse(blob);
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->engine, blob.data() + 512);
  EXPECT_EQ(parsed->engine_size, 3u);
}

TEST(BlobParse, EmptyEngineAtTheEnd) {
  auto parsed = parse(make_blob(kJson, ""));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->engine_size, 0u);
}

TEST(BlobParse, LargestDeviceOrdinal) {
  auto parsed = parse(make_blob(R"({"device_id":2147483647})", "E"));
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata.device_id, std::numeric_limits<int32_t>::max());
}

TEST(BlobParse, HeaderAloneIsReadWithoutTheMetadata) {
  Bytes blob = make_blob("not json", "E");
  auto header = parse_header(blob.data(), blob.size());
  TRTET_ASSERT_OK(header);
  EXPECT_EQ(header->metadata_size, 8u);
}

// ---- the malformed-input catalogue ------------------------------------------------------------

struct Malformed {
  std::string name;
  Bytes blob;
  ErrorCode code;
  std::string fragment;
};

std::ostream& operator<<(std::ostream& os, const Malformed& c) { return os << c.name; }

Bytes truncated(Bytes blob, size_t size) {
  blob.resize(size);
  return blob;
}

Bytes with_magic(const char* magic) {
  Bytes blob = make_blob(kJson, "E");
  std::copy(magic, magic + 4, blob.begin());
  return blob;
}

template <typename Edit>
Bytes edited(Edit edit) {
  Bytes blob = make_blob(kJson, "ENGINE");
  edit(blob);
  return blob;
}

Bytes json_blob(const std::string& json) { return make_blob(json, "E"); }

std::vector<Malformed> catalogue() {
  const Bytes good = make_blob(kJson, "ENGINE");
  const uint32_t engine_offset = trtet_test::blob_bytes::get_u32(good, kEngineOffsetField);
  const uint32_t json_size = sizeof(kJson) - 1;
  const ErrorCode bad = ErrorCode::kInvalidProgram;
  return {
      // header and layout
      {"EmptyBlob", {}, bad, "0 bytes is shorter than the 32-byte header"},
      {"ShortBlob", truncated(good, 31), bad, "31 bytes is shorter than the 32-byte header"},
      {"UnknownMagic", with_magic("TR03"), bad, "unknown magic \"TR03\""},
      {"LowerCaseMagic", with_magic("tr01"), bad, "unknown magic \"tr01\""},
      {"BinaryMagic", with_magic("\x00\xffTR"), bad, "unknown magic \"\\x00\\xffTR\""},
      {"MetadataInsideHeader", edited([](Bytes& b) { set_u32(b, kMetadataOffsetField, 16); }), bad,
       "metadata offset 16 is inside the 32-byte header"},
      {"MetadataOffsetZero", edited([](Bytes& b) { set_u32(b, kMetadataOffsetField, 0); }), bad,
       "metadata offset 0 is inside"},
      {"MetadataPastEnd", edited([](Bytes& b) { set_u32(b, kMetadataSizeField, static_cast<uint32_t>(b.size())); }), bad,
       "metadata [32, " + std::to_string(good.size() + 32) + ") extends past the end of the " +
           std::to_string(good.size()) + "-byte blob"},
      {"MetadataOffsetPlusSizeWrapsU32",
       edited([](Bytes& b) {
         set_u32(b, kMetadataOffsetField, 0xFFFFFFF0u);
         set_u32(b, kMetadataSizeField, 0x20);
       }),
       bad, "extends past the end"},
      {"MisalignedEngine", edited([&](Bytes& b) { set_u32(b, kEngineOffsetField, engine_offset + 8); }), bad,
       "engine offset " + std::to_string(engine_offset + 8) + " is not 16-byte aligned"},
      {"EnginePastEnd", edited([](Bytes& b) { set_u64(b, kEngineSizeField, 7); }), bad,
       "engine at offset " + std::to_string(engine_offset) + " with size 7 extends past the end"},
      {"EngineSizeMaxU64", edited([](Bytes& b) { set_u64(b, kEngineSizeField, ~uint64_t{0}); }), bad,
       "with size 18446744073709551615 extends past the end"},
      {"EngineOffsetPastEnd", edited([](Bytes& b) { set_u32(b, kEngineOffsetField, 0xFFFFFFF0u); set_u64(b, kEngineSizeField, 0); }),
       bad, "engine at offset 4294967280 with size 0 extends past the end"},
      {"MetadataOverlapsEngine", edited([&](Bytes& b) { set_u32(b, kMetadataSizeField, engine_offset - 32 + 1); }), bad,
       "overlaps the engine at offset " + std::to_string(engine_offset)},
      {"MetadataAfterEngine", edited([&](Bytes& b) {
         set_u32(b, kEngineOffsetField, 32);
         set_u64(b, kEngineSizeField, 16);
       }),
       bad, "metadata [32, " + std::to_string(32 + json_size) + ") overlaps the engine at offset 32"},
      // JSON syntax
      {"EmptyMetadata", json_blob(""), bad, "metadata is not valid JSON"},
      {"TruncatedJson", json_blob(std::string(kJson).substr(0, 40)), bad, "metadata is not valid JSON"},
      {"TrailingGarbage", json_blob(std::string(kJson) + "x"), bad, "metadata is not valid JSON"},
      {"TrailingNul", json_blob(std::string(kJson) + std::string(1, '\0')), bad, "metadata is not valid JSON"},
      {"SingleQuotes", json_blob("{'io_bindings':[]}"), bad, "metadata is not valid JSON"},
      {"Comment", json_blob("{/* c */}"), bad, "metadata is not valid JSON"},
      {"ByteOrderMark", json_blob("\xEF\xBB\xBF{}"), bad, "byte-order mark"},
      {"InvalidUtf8", json_blob("{\"target_platform\":\"\xFF\"}"), bad, "metadata is not valid JSON"},
      {"LoneSurrogate", json_blob(R"({"target_platform":"\ud800"})"), bad, "metadata is not valid JSON"},
      // JSON types
      {"TopLevelArray", json_blob("[]"), bad, "the top-level value must be an object, got array"},
      {"TopLevelString", json_blob("\"TR01\""), bad, "the top-level value must be an object, got string"},
      {"IoBindingsNotArray", json_blob(R"({"io_bindings":{}})"), bad, "io_bindings must be an array, got object"},
      {"BindingNotObject", json_blob(R"({"io_bindings":["x"]})"), bad, "io_bindings[0] must be an object, got string"},
      {"BindingNameMissing", json_blob(R"({"io_bindings":[{"name":"a"},{"dtype":""}]})"), bad,
       "io_bindings[1].name is missing"},
      {"BindingNameNotString", json_blob(R"({"io_bindings":[{"name":5}]})"), bad,
       "io_bindings[0].name must be a string, got integer"},
      {"DtypeNull", json_blob(R"({"io_bindings":[{"name":"a","dtype":null}]})"), bad,
       "io_bindings[0].dtype must be a string, got null"},
      {"ShapeNotArray", json_blob(R"({"io_bindings":[{"name":"a","shape":"1x2"}]})"), bad,
       "io_bindings[0].shape must be an array, got string"},
      {"ShapeFloat", json_blob(R"({"io_bindings":[{"name":"a","shape":[1,2.0]}]})"), bad,
       "io_bindings[0].shape[1] must be an integer, got float"},
      {"ShapeTooLarge", json_blob(R"({"io_bindings":[{"name":"a","shape":[9223372036854775808]}]})"), bad,
       "io_bindings[0].shape[0] is out of the int64 range"},
      {"IsInputNotBool", json_blob(R"({"io_bindings":[{"name":"a","is_input":1}]})"), bad,
       "io_bindings[0].is_input must be a boolean, got integer"},
      {"HardwareCompatibleString", json_blob(R"({"hardware_compatible":"1"})"), bad,
       "hardware_compatible must be a boolean, got string"},
      {"DeviceIdFloat", json_blob(R"({"device_id":1.0})"), bad, "device_id must be an integer, got float"},
      {"DeviceIdString", json_blob(R"({"device_id":"0"})"), bad, "device_id must be an integer, got string"},
      {"SerializedMetadataNotString", json_blob(R"({"serialized_metadata":[]})"), bad,
       "serialized_metadata must be a string, got array"},
      {"TargetPlatformNotString", json_blob(R"({"target_platform":false})"), bad,
       "target_platform must be a string, got boolean"},
      {"AliasedIoNotArray", with_io(kTwoPairs, R"({"out_k":"in_k"})"), bad, "aliased_io must be an array, got object"},
      {"AliasNotObject", with_io(kTwoPairs, R"([["out_k","in_k"]])"), bad, "aliased_io[0] must be an object, got array"},
      {"AliasOutputMissing", with_io(kTwoPairs, R"([{"input":"in_k"}])"), bad, "aliased_io[0].output is missing"},
      {"AliasInputMissing", with_io(kTwoPairs, R"([{"output":"out_k"}])"), bad, "aliased_io[0].input is missing"},
      {"AliasKindNotString", with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k","kind":0}])"), bad,
       "aliased_io[0].kind must be a string, got integer"},
      {"UnknownAliasKind", with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k","kind":"inplace"}])"), bad,
       "aliased_io[0].kind \"inplace\" is not an alias kind"},
      // metadata rules
      {"DuplicateBindingName", with_io(R"([{"name":"a","is_input":true},{"name":"b","is_input":false},{"name":"a","is_input":false}])"),
       bad, "io_bindings[2].name \"a\" is a duplicate binding name"},
      {"EmptyBindingName", with_io(R"([{"name":""}])"), bad, "io_bindings[0].name is empty"},
      {"NegativeDimension", with_io(R"([{"name":"a","shape":[2,-2]}])"), bad, "io_bindings[0].shape[1] is -2"},
      {"NegativeDeviceId", json_blob(R"({"device_id":-1})"), bad, "device_id -1 is not a device ordinal"},
      {"DeviceIdTooLarge", json_blob(R"({"device_id":2147483648})"), bad, "device_id 2147483648 is not a device ordinal"},
      {"DeviceIdBeyondInt64", json_blob(R"({"device_id":18446744073709551615})"), bad, "device_id is out of the int64 range"},
      {"AliasToMissingOutput", with_io(kTwoPairs, R"([{"output":"nope","input":"in_k"}])"), bad,
       "aliased_io[0].output \"nope\" names no binding"},
      {"AliasToMissingInput", with_io(kTwoPairs, R"([{"output":"out_k","input":"nope"}])"), bad,
       "aliased_io[0].input \"nope\" names no binding"},
      {"AliasOutputIsAnInput", with_io(kTwoPairs, R"([{"output":"in_u","input":"in_k"}])"), bad,
       "aliased_io[0].output \"in_u\" names an input, not an output"},
      {"AliasInputIsAnOutput", with_io(kTwoPairs, R"([{"output":"out_k","input":"out_u"}])"), bad,
       "aliased_io[0].input \"out_u\" names an output, not an input"},
      {"OutputAliasedTwice",
       with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k"},{"output":"out_k","input":"in_u","kind":"user"}])"), bad,
       "aliased_io[1].output \"out_k\" is aliased twice"},
      {"Tr01WithAliases", with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k"}])", kMagicV1), bad,
       "magic TR01 but the metadata carries 1 aliased_io entries"},
      // Aliases a program may not ask for: two outputs written into one input, an output larger than its input.
      {"InputAliasedTwice",
       with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k"},{"output":"out_u","input":"in_k","kind":"user"}])"), bad,
       "aliased_io[0] and aliased_io[1] both write into input \"in_k\""},
      {"AliasedOutputLargerThanItsInput",
       with_io(R"([{"name":"x","dtype":"float32","shape":[4],"is_input":true},)"
               R"({"name":"y","dtype":"float32","shape":[2,4],"is_input":false}])",
               R"([{"output":"y","input":"x","kind":"user"}])"),
       bad, "output \"y\" has 8 elements, more than the 4 of input \"x\""},
      {"AliasedDtypesDiffer",
       with_io(R"([{"name":"x","dtype":"float16","shape":[4],"is_input":true},)"
               R"({"name":"y","dtype":"float32","shape":[4],"is_input":false}])",
               R"([{"output":"y","input":"x","kind":"user"}])"),
       bad, "output \"y\" is float32, its input \"x\" float16"},
      // Binding names reach messages; terminal control sequences in them may not.
      {"DuplicateNameWithControlCharacters", with_io(R"([{"name":"a\u001b]0;owned\u0007"},{"name":"a\u001b]0;owned\u0007"}])"),
       bad, "io_bindings[1].name \"a\\x1b]0;owned\\x07\" is a duplicate"},
      {"AliasNameWithC1Control", with_io(kTwoPairs, R"([{"output":"a\u009b2J","input":"in_k"}])"), bad,
       "aliased_io[0].output \"a\\xc2\\x9b2J\" names no binding"},
      // Metadata past the cap, and JSON nested past the depth cap, are refused before they are parsed.
      {"MetadataPastTheCap", json_blob(R"({"serialized_metadata":")" + std::string(kDefaultMaxMetadataBytes, 'm') + "\"}"),
       bad, "more than the 1048576 this application accepts (the load-time backend option max_blob_metadata_bytes"},
      {"JsonNestedPastTheDepthCap",
       json_blob(R"({"extra":)" + std::string(kMaxMetadataDepth, '[') + std::string(kMaxMetadataDepth, ']') + "}"), bad,
       "nested more than 32 deep"},
  };
}

class BlobMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(BlobMalformed, IsRejectedNamingTheCheck) {
  const Malformed& c = GetParam();
  auto parsed = parse_blob(c.blob.empty() ? static_cast<const void*>("") : c.blob.data(), c.blob.size());
  ASSERT_FALSE(parsed.ok()) << c.name << " was accepted";
  TRTET_EXPECT_ERROR_OMITS(parsed, "\x1b") << "a raw escape in the message";
  TRTET_EXPECT_ERROR(parsed, c.code, c.fragment) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BlobMalformed, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<Malformed>& info) { return info.param.name; });

TEST(BlobParse, NullDataIsAnInvalidArgument) {
  auto parsed = parse_blob(nullptr, 64);
  ASSERT_FALSE(parsed.ok());
  TRTET_EXPECT_ERROR(parsed, ErrorCode::kInvalidArgument, "data is null");
}

TEST(BlobParse, EveryTruncationOfAValidBlobIsRejected) {
  const Bytes good = make_blob(kJson, "ENGINE");
  for (size_t size = 0; size < good.size(); ++size) {
    auto parsed = parse_blob(good.data(), size);
    EXPECT_FALSE(parsed.ok()) << "accepted a blob truncated to " << size << " bytes";
  }
}

TEST(BlobParse, DeeplyNestedJsonIsRejectedBeforeItIsParsed) {
  // Unknown keys are ignored up to the depth cap; past it the JSON is refused before the parser
  // builds anything (parsed, 100 MB of '[' would take 11.4 s and 3.76 GB).
  const std::string depth_ok = R"({"extra":)" + std::string(kMaxMetadataDepth - 1, '[') +
                               std::string(kMaxMetadataDepth - 1, ']') + "}";
  TRTET_EXPECT_OK(parse(make_blob(depth_ok, "E")));
  const std::string in_strings = R"({"extra":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})";
  TRTET_EXPECT_OK(parse(make_blob(in_strings, "E")));  // brackets inside strings do not nest
  const std::string deep = R"({"extra":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto parsed = parse(make_blob(deep, "E"));
  ASSERT_FALSE(parsed.ok());
  TRTET_EXPECT_ERROR_SAYS(parsed, "nested more than 32 deep (at offset 40)");
  auto broken = parse(make_blob(R"({"extra":)" + std::string(100000, '['), "E"));
  EXPECT_FALSE(broken.ok());
}

TEST(BlobParse, TheApplicationMayRaiseTheMetadataCap) {
  const std::string big = R"({"serialized_metadata":")" + std::string(kDefaultMaxMetadataBytes, 'm') + "\"}";
  const Bytes blob = make_blob(big, "E");
  EXPECT_FALSE(parse_blob(blob.data(), blob.size()).ok());
  ParseLimits limits;
  limits.max_metadata_bytes = 2 * kDefaultMaxMetadataBytes;
  auto parsed = parse_blob(blob.data(), blob.size(), limits);
  TRTET_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->metadata.serialized_metadata.size(), kDefaultMaxMetadataBytes);
  limits.max_metadata_bytes = 16;  // and lower it
  EXPECT_FALSE(parse_blob(blob.data(), blob.size(), limits).ok());
}

TEST(BlobParse, AliasesWithinTheRulesAreAccepted) {
  // Same dtype, output no larger than its input; shapes the writer leaves out are not compared.
  TRTET_EXPECT_OK(parse(with_io(R"([{"name":"x","dtype":"float32","shape":[2,4],"is_input":true},)"
                                R"({"name":"y","dtype":"float32","shape":[8],"is_input":false}])",
                                R"([{"output":"y","input":"x","kind":"user"}])")));
  TRTET_EXPECT_OK(parse(with_io(R"([{"name":"x","dtype":"float32","shape":[-1,4],"is_input":true},)"
                                R"({"name":"y","dtype":"float32","shape":[64,4],"is_input":false}])",
                                R"([{"output":"y","input":"x","kind":"user"}])")));
  TRTET_EXPECT_OK(parse(with_io(kTwoPairs, R"([{"output":"out_k","input":"in_k"},{"output":"out_u","input":"in_u"}])")));
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::blob
