// TRTET_DEBUG turns debug logging on only with a value that means on (0, false, off, no or empty
// leave it off), and log lines carry no control characters from the text they quote. Each case
// runs in a fresh process (the setting is read once per process).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "common/log.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;

/// Logs a debug line, then "end", and exits (in the child of a death test).
void debug_line() {
  ex::log(ex::LogLevel::kDebug, "the debug line");
  std::fprintf(stderr, "end\n");
  std::exit(0);
}

/// Sets TRTET_DEBUG (null: unsets it) for the child processes the death tests start: the
/// library reads it once, possibly while it is loaded, so it must be in the child's environment from
/// its start ("threadsafe" death tests run the test binary again).
void set_debug(const char* value) {
  if (value != nullptr) {
    setenv("TRTET_DEBUG", value, 1);
  } else {
    unsetenv("TRTET_DEBUG");
  }
}

class SecurityLog : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  void TearDown() override { set_debug(nullptr); }
};

TEST_F(SecurityLog, DebugLoggingIsOffWhenTheVariableSaysSo) {
  for (const char* off : {"0", "false", "OFF", "no", "", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(off != nullptr ? off : "unset");
    set_debug(off);
    EXPECT_EXIT(debug_line(), ::testing::ExitedWithCode(0), "^end\n$");
  }
}

TEST_F(SecurityLog, DebugLoggingIsOnWhenAsked) {
  for (const char* on : {"1", "true", "yes"}) {
    SCOPED_TRACE(on);
    set_debug(on);
    EXPECT_EXIT(debug_line(), ::testing::ExitedWithCode(0), "debug: the debug line\nend\n$");
  }
}

TEST_F(SecurityLog, ControlCharactersAreEscapedWhenPrinted) {
  EXPECT_EXIT(
      {
        ex::log(ex::LogLevel::kWarning, "name \"%s\"", "a\x1b]0;owned\x07");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "warning: name \"a\\\\x1b]0;owned\\\\x07\"\n$");
}

}  // namespace
