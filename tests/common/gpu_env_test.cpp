// Strict mode (TRTET_STRICT_SKIPS=1, common/gpu.h) on the CPU: a sanitizer variable is believed
// outside strict mode or under compute-sanitizer, and is a test failure (and counts for nothing)
// in strict mode where no sanitizer runs the process; TRTET_SKIP_UNLESS_STRICT fails in strict mode.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/gpu.h"

namespace trtet_test {
namespace {

constexpr const char* kVariables[] = {"TRTET_STRICT_SKIPS", "TRTET_UNDER_SANITIZER", "TRTET_SANITIZER_TOOL",
                                      "CUDA_INJECTION64_PATH", "TRTET_INITCHECK_GREEN"};

/// The variables of kVariables set as given (the rest unset) for the scope, then restored.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> set) {
    for (const char* name : kVariables) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : set) setenv(name, value, /*overwrite=*/1);
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;  // one restore
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(StrictSkips, OnlyWhenTheVariableIsOne) {
  {
    ScopedEnvironment env({});
    EXPECT_FALSE(strict_skips());
  }
  {
    ScopedEnvironment env({{"TRTET_STRICT_SKIPS", "0"}});
    EXPECT_FALSE(strict_skips());
  }
  ScopedEnvironment env({{"TRTET_STRICT_SKIPS", "1"}});
  EXPECT_TRUE(strict_skips());
}

TEST(StrictSkips, SanitizerVariablesAreBelievedOutsideStrictMode) {
  ScopedEnvironment env({{"TRTET_UNDER_SANITIZER", "1"}, {"TRTET_SANITIZER_TOOL", "initcheck"}});
  EXPECT_TRUE(under_sanitizer());
  EXPECT_EQ(sanitizer_tool(), "initcheck");
  EXPECT_TRUE(green_contexts_unsupported_here());
}

bool g_under = true;
std::string g_tool = "?";
void read_under_sanitizer() { g_under = under_sanitizer(); }
void read_sanitizer_tool() { g_tool = sanitizer_tool(); }

TEST(StrictSkips, ALeftoverSanitizerVariableFailsInStrictMode) {
  ScopedEnvironment env({{"TRTET_STRICT_SKIPS", "1"}, {"TRTET_UNDER_SANITIZER", "1"}, {"TRTET_SANITIZER_TOOL", "initcheck"}});
  EXPECT_NONFATAL_FAILURE(read_under_sanitizer(), "TRTET_UNDER_SANITIZER is set, but compute-sanitizer does not run");
  EXPECT_FALSE(g_under) << "a leftover variable still skipped the timing tests";
  EXPECT_NONFATAL_FAILURE(read_sanitizer_tool(), "TRTET_SANITIZER_TOOL is set, but compute-sanitizer does not run");
  EXPECT_EQ(g_tool, "") << "a leftover variable still named a tool";
}

TEST(StrictSkips, UnderComputeSanitizerStrictModeChangesNothing) {
  ScopedEnvironment env({{"TRTET_STRICT_SKIPS", "1"},
                         {"TRTET_UNDER_SANITIZER", "1"},
                         {"TRTET_SANITIZER_TOOL", "memcheck"},
                         {"CUDA_INJECTION64_PATH", "/opt/cuda/compute-sanitizer/libsanitizer-collection.so"}});
  EXPECT_TRUE(under_sanitizer());
  EXPECT_EQ(sanitizer_tool(), "memcheck");
  EXPECT_FALSE(green_contexts_unsupported_here());
}

void skip_unless_strict() { TRTET_SKIP_UNLESS_STRICT("no address came back in " << 256 << " tries"); }

TEST(StrictSkips, AnAddressReuseSkipFailsInStrictMode) {
  ScopedEnvironment env({{"TRTET_STRICT_SKIPS", "1"}});
  EXPECT_FATAL_FAILURE(skip_unless_strict(), "no address came back in 256 tries (a failure, not a skip");
}

}  // namespace
}  // namespace trtet_test
