// GPU presence for tests: GPU tests skip with CUDA's reason where no device is visible.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "common/status.h"

namespace trtet_test {

/// Empty when a CUDA device is usable; otherwise why not (CUDA's own words).
const std::string& no_gpu_reason();

/// Strict mode, TRTET_STRICT_SKIPS=1 (scripts/gpu test sets it on the GPU machine; sanitizer runs
/// do not): skips that must not fire there fail instead. A test that needs the driver to reuse an
/// address or a handle fails where it does not (TRTET_SKIP_UNLESS_STRICT), and a sanitizer variable
/// (TRTET_UNDER_SANITIZER, TRTET_SANITIZER_TOOL) left set in a process compute-sanitizer does not
/// run fails the test that reads it, rather than silently shrinking the suite.
bool strict_skips();

/// True when the process runs under compute-sanitizer: TRTET_UNDER_SANITIZER=1 (set by
/// `scripts/gpu sanitize`), or CUDA_INJECTION64_PATH naming the sanitizer's injection
/// library (how compute-sanitizer attaches to the process). Its tools slow kernels and API calls
/// 10-100x, so timing assertions cannot hold there. In strict mode TRTET_UNDER_SANITIZER alone,
/// without the injection library, is a test failure (ADD_FAILURE) and counts for nothing.
bool under_sanitizer();

/// The compute-sanitizer tool this process runs under, as scripts/gpu sanitize names it in
/// TRTET_SANITIZER_TOOL (memcheck, initcheck, racecheck or synccheck); empty where it is not set
/// (and, in strict mode, where no sanitizer runs the process: a test failure, as above).
std::string sanitizer_tool();

/// True where this process must make no green contexts: under compute-sanitizer's initcheck
/// (TRTET_SANITIZER_TOOL=initcheck). On the H200 with CUDA 13, initcheck's process dies (exit 11,
/// no error reported) at stream-ordered allocation on a green-context stream, which the SM probe
/// and the session's staging both do; a plain launch there, and the same allocation on an ordinary
/// stream, run through. scripts/gpu sanitize's raw-CUDA probe (tests/green/
/// initcheck_green_probe.cu) shows each case under initcheck first.
/// memcheck, racecheck and synccheck run every green-context test. TRTET_INITCHECK_GREEN=1 runs
/// them under initcheck anyway (to look into the crash).
bool green_contexts_unsupported_here();

/// Why a green-context test skips where green_contexts_unsupported_here().
extern const char* const kGreenUnsupportedReason;

}  // namespace trtet_test

/// First statement of a GPU test (or a fixture's SetUp) that makes green contexts: skips it under
/// initcheck (green_contexts_unsupported_here()). Tests without green contexts run there as usual.
#define TRTET_SKIP_IF_GREEN_UNSUPPORTED()                                              \
  do {                                                                                 \
    if (::trtet_test::green_contexts_unsupported_here()) {                             \
      GTEST_SKIP() << ::trtet_test::kGreenUnsupportedReason;                           \
    }                                                                                  \
  } while (0)

/// Skips the test with `reason` (a stream expression), or fails it in strict mode (strict_skips()):
/// for skips the GPU machine must never take, such as a driver that reused no address.
#define TRTET_SKIP_UNLESS_STRICT(reason)                                               \
  do {                                                                                 \
    if (::trtet_test::strict_skips()) {                                                \
      GTEST_FAIL() << reason << " (a failure, not a skip: TRTET_STRICT_SKIPS=1)";      \
    }                                                                                  \
    GTEST_SKIP() << reason;                                                            \
  } while (0)

/// First statement of a GPU test whose assertions are about elapsed time (an upper bound on how
/// long a call takes, or work still running when it returns): skips it under compute-sanitizer.
#define TRTET_SKIP_TIMING_UNDER_SANITIZER()                                            \
  do {                                                                                 \
    if (::trtet_test::under_sanitizer()) {                                             \
      GTEST_SKIP() << "timing assertion skipped under compute-sanitizer";              \
    }                                                                                  \
  } while (0)

/// First statement of every GPU test: skips it, with the reason, where no GPU is usable.
#define TRTET_REQUIRE_GPU()                                                            \
  do {                                                                                 \
    if (!::trtet_test::no_gpu_reason().empty()) {                                      \
      GTEST_SKIP() << "no GPU: " << ::trtet_test::no_gpu_reason();                     \
    }                                                                                  \
  } while (0)

/// Asserts that a Status or Result is ok, printing its message otherwise.
#define TRTET_ASSERT_OK(expr)                                                          \
  do {                                                                                 \
    const auto& trtet_value_ = (expr);                                                 \
    ASSERT_TRUE(trtet_value_.ok()) << #expr << ": " << trtet_test::status_text(trtet_value_); \
  } while (0)
#define TRTET_EXPECT_OK(expr)                                                          \
  do {                                                                                 \
    const auto& trtet_value_ = (expr);                                                 \
    EXPECT_TRUE(trtet_value_.ok()) << #expr << ": " << trtet_test::status_text(trtet_value_); \
  } while (0)

namespace trtet_test {
template <typename T>
std::string status_text(const T& value) {
  if constexpr (std::is_same_v<T, torch_tensorrt::executorch_backend::Status>) {
    return value.to_string();
  } else {
    return value.status().to_string();
  }
}
}  // namespace trtet_test
