// The fuzzer's seed corpus (tests/blob/corpus/): valid blobs ("ok-*") that parse_blob accepts and
// malformed ones ("bad-*") it rejects. make_seeds writes them; corpus_test checks that the committed
// files are exactly these.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "blob/format.h"
#include "blob/write.h"
#include "blob_bytes.h"

namespace trtet_test {

inline std::vector<std::pair<std::string, std::vector<uint8_t>>> blob_seed_cases() {
  namespace blob = torch_tensorrt::executorch_backend::blob;
  using blob_bytes::make_blob;
  const auto io = &blob_bytes::binding;
  auto write = [](const blob::Metadata& m, const std::string& engine) {
    return blob::write_blob(m, engine.data(), engine.size());
  };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;

  blob::Metadata typical;
  typical.io_bindings = {io("x", true, "", {}), io("y", false, "", {})};
  typical.hardware_compatible = true;
  typical.device_id = 1;
  seeds.emplace_back("ok-typical", write(typical, "engine-bytes"));
  seeds.emplace_back("ok-empty", write(blob::Metadata{}, ""));

  blob::Metadata kv;
  kv.io_bindings = {io("tokens", true, "int64", {1, -1}), io("k_in", true, "float16", {1, 8, -1, 64}),
                    io("logits", false, "float32", {1, -1, 32000}), io("k_out", false, "float16", {1, 8, -1, 64}),
                    io("u_in", true, "float32", {4}), io("u_out", false, "float32", {4})};
  kv.aliased_io = {{"k_out", "k_in", blob::AliasKind::kKvCacheUpdate}, {"u_out", "u_in", blob::AliasKind::kUser}};
  kv.serialized_metadata = "bWV0YQ==";
  kv.target_platform = "linux_x86_64";
  seeds.emplace_back("ok-aliased", write(kv, "ENGINE-PLAN-0123456789"));

  blob::Metadata unicode;
  unicode.io_bindings = {io("entr\xC3\xA9" "e", true, "", {}), io("\xE8\xBE\x93\xE5\x87\xBA\xF0\x9F\x98\x80", false, "", {}),
                         io("q\"\\/\n", false, "", {})};
  seeds.emplace_back("ok-unicode", write(unicode, "E"));

  seeds.emplace_back("ok-defaults", make_blob("{}", "E"));
  seeds.emplace_back("ok-no-aliased-io-key",
                     make_blob(R"({"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true}],)"
                               R"("hardware_compatible":false,"device_id":0,"serialized_metadata":"","target_platform":""})",
                               "E"));
  seeds.emplace_back("ok-pretty", make_blob("{\n \"io_bindings\" : [ {\"name\": \"a\", \"shape\": [1, 2]} ],\n"
                                            " \"aliased_io\": [], \"unknown\": {\"k\": [null, 1.5]}\n}\n",
                                            "E", blob::kMagicV2));

  std::vector<uint8_t> short_blob = write(typical, "engine-bytes");
  short_blob.resize(20);
  seeds.emplace_back("bad-short", short_blob);
  std::vector<uint8_t> magic = write(typical, "engine-bytes");
  magic[3] = '9';
  seeds.emplace_back("bad-magic", magic);
  std::vector<uint8_t> overlap = write(typical, "engine-bytes");
  blob_bytes::set_u32(overlap, blob::kMetadataSizeField, blob_bytes::get_u32(overlap, blob::kEngineOffsetField));
  seeds.emplace_back("bad-overlap", overlap);
  std::vector<uint8_t> misaligned = write(typical, "engine-bytes");
  blob_bytes::set_u32(misaligned, blob::kEngineOffsetField,
                      blob_bytes::get_u32(misaligned, blob::kEngineOffsetField) - 4);
  seeds.emplace_back("bad-misaligned", misaligned);
  seeds.emplace_back("bad-json", make_blob(R"({"io_bindings":[{"name":"x",}]})", "E"));
  seeds.emplace_back("bad-types", make_blob(R"({"io_bindings":[{"name":"x","shape":[1.5]}],"device_id":"0"})", "E"));
  seeds.emplace_back("bad-alias-kind",
                     make_blob(R"({"io_bindings":[{"name":"i"},{"name":"o","is_input":false}],)"
                               R"("aliased_io":[{"output":"o","input":"i","kind":"inplace"}]})",
                               "E", blob::kMagicV2));
  seeds.emplace_back("bad-alias-missing",
                     make_blob(R"({"io_bindings":[{"name":"i"},{"name":"o","is_input":false}],)"
                               R"("aliased_io":[{"output":"o","input":"missing"}]})",
                               "E", blob::kMagicV2));
  seeds.emplace_back("bad-duplicate", make_blob(R"({"io_bindings":[{"name":"a"},{"name":"a","is_input":false}]})", "E"));
  return seeds;
}

}  // namespace trtet_test
