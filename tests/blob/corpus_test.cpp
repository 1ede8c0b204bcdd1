// The committed seed corpus (tests/blob/corpus/) is what seed_cases.h describes, and every seed is
// accepted or rejected as its name says.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "blob/parse.h"
#include "common/gpu.h"
#include "seed_cases.h"

namespace torch_tensorrt::executorch_backend::blob {
namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(BlobCorpus, CommittedSeedsMatchTheirDescription) {
  const std::filesystem::path dir = TRTET_BLOB_CORPUS_DIR;
  std::set<std::string> expected_names;
  for (const auto& [name, bytes] : trtet_test::blob_seed_cases()) {
    expected_names.insert(name);
    EXPECT_EQ(read_file(dir / name), bytes) << name << " differs: regenerate with make_seeds " << dir;
  }
  std::set<std::string> committed;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) committed.insert(entry.path().filename());
  EXPECT_EQ(committed, expected_names);
}

TEST(BlobCorpus, SeedsParseAsTheirNamesSay) {
  for (const auto& [name, bytes] : trtet_test::blob_seed_cases()) {
    auto parsed = parse_blob(bytes.data(), bytes.size());
    if (name.rfind("ok-", 0) == 0) {
      EXPECT_TRUE(parsed.ok()) << name << ": " << parsed.status().to_string();
    } else {
      EXPECT_FALSE(parsed.ok()) << name << " was accepted";
      EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidProgram) << name;
    }
  }
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::blob
