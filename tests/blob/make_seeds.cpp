// Writes the fuzzer's seed corpus: make_seeds <directory>. Regenerate tests/blob/corpus/ with it
// after changing seed_cases.h (corpus_test fails until the committed files match).
#include <cstdio>
#include <fstream>
#include <string>

#include "seed_cases.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  for (const auto& [name, bytes] : trtet_test::blob_seed_cases()) {
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
