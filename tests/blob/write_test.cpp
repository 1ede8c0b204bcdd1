// blob/write.h and blob/metadata_json.h (encoding): byte-exact against vectors built here from the
// layout and from the JSON Torch-TensorRT's Python writer produces.
#include <gtest/gtest.h>

#include <string>

#include "blob/metadata_json.h"
#include "blob/write.h"
#include "blob_bytes.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

using namespace trtet_test::blob_bytes;  // binding, Bytes, make_blob, pack_header, RawHeader

Bytes write(const Metadata& metadata, const std::string& engine) {
  return write_blob(metadata, engine.data(), engine.size());
}

// What Torch-TensorRT writes for one input x, one output y on device 1 (hardware compatible):
// captured from its serialize_engine().
constexpr char kTwoBindingsJson[] =
    R"({"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true},)"
    R"({"name":"y","dtype":"","shape":[],"is_input":false}],"aliased_io":[],)"
    R"("hardware_compatible":true,"device_id":1,"serialized_metadata":"","target_platform":""})";

Metadata two_bindings() {
  Metadata m;
  m.io_bindings = {binding("x", true), binding("y", false)};
  m.hardware_compatible = true;
  m.device_id = 1;
  return m;
}

TEST(BlobWrite, HeaderBytesOfTheReferenceBlob) {
  const Bytes blob = write(two_bindings(), "engine-bytes");
  // 223 bytes of JSON after the 32-byte header end at 255; the engine starts at 256.
  const Bytes expected_header = {
      'T',  'R',  '0',  '1',                           // magic
      0x20, 0x00, 0x00, 0x00,                          // metadata offset 32
      0xdf, 0x00, 0x00, 0x00,                          // metadata size 223
      0x00, 0x01, 0x00, 0x00,                          // engine offset 256
      0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // engine size 12
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // reserved
  };
  ASSERT_EQ(blob.size(), 268u);
  EXPECT_EQ(Bytes(blob.begin(), blob.begin() + kHeaderSize), expected_header);
  EXPECT_EQ(std::string(blob.begin() + kHeaderSize, blob.begin() + kHeaderSize + 223), kTwoBindingsJson);
  EXPECT_EQ(blob[255], 0);  // one byte of zero padding
  EXPECT_EQ(std::string(blob.begin() + 256, blob.end()), "engine-bytes");
}

TEST(BlobWrite, WholeBlobMatchesTheLayout) {
  EXPECT_EQ(write(two_bindings(), "engine-bytes"), make_blob(kTwoBindingsJson, "engine-bytes"));
}

TEST(BlobWrite, EmptyMetadataWritesEveryKeyWithItsDefault) {
  const std::string json =
      R"({"io_bindings":[],"aliased_io":[],"hardware_compatible":false,"device_id":0,)"
      R"("serialized_metadata":"","target_platform":""})";
  EXPECT_EQ(metadata_to_json(Metadata{}), json);
  EXPECT_EQ(write(Metadata{}, "E"), make_blob(json, "E"));
}

TEST(BlobWrite, AliasedIoWritesTr02AndTheAliasList) {
  Metadata m;
  m.io_bindings = {binding("in_k", true), binding("out_k", false), binding("in_u", true), binding("out_u", false)};
  m.aliased_io = {{"out_k", "in_k", AliasKind::kKvCacheUpdate}, {"out_u", "in_u", AliasKind::kUser}};
  const std::string json =
      R"({"io_bindings":[{"name":"in_k","dtype":"","shape":[],"is_input":true},)"
      R"({"name":"out_k","dtype":"","shape":[],"is_input":false},)"
      R"({"name":"in_u","dtype":"","shape":[],"is_input":true},)"
      R"({"name":"out_u","dtype":"","shape":[],"is_input":false}],)"
      R"("aliased_io":[{"output":"out_k","input":"in_k","kind":"kv_cache_update"},)"
      R"({"output":"out_u","input":"in_u","kind":"user"}],)"
      R"("hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""})";
  const Bytes blob = write(m, "eng");
  EXPECT_EQ(blob, make_blob(json, "eng", kMagicV2));
  EXPECT_EQ(std::string(blob.begin(), blob.begin() + 4), "TR02");
}

TEST(BlobWrite, NoAliasesWritesTr01) {
  const Bytes blob = write(two_bindings(), "e");
  EXPECT_EQ(std::string(blob.begin(), blob.begin() + 4), "TR01");
}

TEST(BlobWrite, ShapesDtypesAndScalars) {
  Metadata m;
  m.io_bindings = {binding("a", true, "float16", {-1, 3, 224, 224}), binding("b", false, "int64", {9007199254740993})};
  m.device_id = 7;
  m.serialized_metadata = "c2VyaWFsaXplZA==";
  m.target_platform = "linux_x86_64";
  EXPECT_EQ(metadata_to_json(m),
            R"({"io_bindings":[{"name":"a","dtype":"float16","shape":[-1,3,224,224],"is_input":true},)"
            R"({"name":"b","dtype":"int64","shape":[9007199254740993],"is_input":false}],"aliased_io":[],)"
            R"("hardware_compatible":false,"device_id":7,"serialized_metadata":"c2VyaWFsaXplZA==",)"
            R"("target_platform":"linux_x86_64"})");
}

TEST(BlobWrite, EscapesLikePythonJsonDumps) {
  // json.dumps (ensure_ascii) escapes quote, backslash, control characters (short forms for
  // \b \f \n \r \t), DEL and every non-ASCII character, as lower-case \uXXXX; '/' stays as is.
  Metadata m;
  m.target_platform = std::string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f") + "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  EXPECT_EQ(metadata_to_json(m),
            R"({"io_bindings":[],"aliased_io":[],"hardware_compatible":false,"device_id":0,)"
            R"("serialized_metadata":"","target_platform":"q\"b\\s/\b\f\n\r\t\u0001\u001f\u007f\u00e9\u20ac\ud83d\ude00"})");
}

TEST(BlobWrite, InvalidUtf8IsWrittenAsReplacementCharacter) {
  Metadata m;
  m.serialized_metadata = "a\xFF" "b";
  const std::string json = metadata_to_json(m);
  EXPECT_NE(json.find(R"("serialized_metadata":"a\ufffdb")"), std::string::npos) << json;
}

TEST(BlobWrite, NoPaddingWhenMetadataEndsAligned) {
  // 32 + 128 = 160, a multiple of 16: the engine follows the JSON directly.
  Metadata m;
  m.target_platform = std::string(128 - metadata_to_json(Metadata{}).size(), 'p');
  ASSERT_EQ(metadata_to_json(m).size(), 128u);
  const Bytes blob = write(m, "ENGINE");
  EXPECT_EQ(trtet_test::blob_bytes::get_u32(blob, kEngineOffsetField), 160u);
  EXPECT_EQ(blob, make_blob(metadata_to_json(m), "ENGINE"));
}

TEST(BlobWrite, FifteenBytesOfZeroPaddingAtMost) {
  Metadata m;
  m.target_platform = std::string(129 - metadata_to_json(Metadata{}).size(), 'p');
  const Bytes blob = write(m, "ENGINE");
  EXPECT_EQ(trtet_test::blob_bytes::get_u32(blob, kEngineOffsetField), 176u);
  for (size_t i = kHeaderSize + 129; i < 176; ++i) EXPECT_EQ(blob[i], 0) << i;
}

TEST(BlobWrite, EmptyEngineFromNullPointer) {
  const Bytes blob = write_blob(Metadata{}, nullptr, 0);
  const std::string json = metadata_to_json(Metadata{});
  RawHeader h;
  h.metadata_offset = 32;
  h.metadata_size = static_cast<uint32_t>(json.size());
  h.engine_offset = static_cast<uint32_t>((32 + json.size() + 15) / 16 * 16);
  h.engine_size = 0;
  const Bytes header = pack_header(h);
  ASSERT_EQ(blob.size(), h.engine_offset);
  EXPECT_EQ(Bytes(blob.begin(), blob.begin() + 32), header);
}

TEST(BlobWrite, WritesUnvalidatedMetadataAsGiven) {
  Metadata m;
  m.io_bindings = {binding("dup", true), binding("dup", true)};
  m.aliased_io = {{"missing", "dup", AliasKind::kUser}};
  m.device_id = -3;
  const std::string json = metadata_to_json(m);
  EXPECT_NE(json.find(R"("device_id":-3)"), std::string::npos);
  EXPECT_NE(json.find(R"({"output":"missing","input":"dup","kind":"user"})"), std::string::npos);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::blob
