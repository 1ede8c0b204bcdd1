// Checks of an error: its code and what its message says, in one place, with the whole error shown
// when a check fails. A Status or a Result (its status()) alike:
//
//   TRTET_EXPECT_ERROR(session.execute(args, 3), ErrorCode::kInvalidArgument, "\"x\"") << "shape " << shape;
//   TRTET_EXPECT_ERROR(parsed, ErrorCode::kInvalidProgram, "complex64", "rank 1");  // every part
//   TRTET_EXPECT_ERROR_SAYS(status, "pageable");                                   // any error code
//   TRTET_EXPECT_ERROR_OMITS(parsed, "\x1b") << "a raw escape in the message";
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <torch_tensorrt/executorch/Error.h>

namespace trtet_test {

/// The error code a check accepts: one code, or any error (empty; never success).
using ExpectedCode = std::optional<torch_tensorrt::executorch_backend::ErrorCode>;

/// The status of a Status or of a Result.
template <typename T>
torch_tensorrt::executorch_backend::Status status_of(const T& value) {
  if constexpr (std::is_same_v<T, torch_tensorrt::executorch_backend::Status>) {
    return value;
  } else {
    return value.status();
  }
}

/// `status` is an error with code `code` (any error where empty) whose message contains every
/// one of `parts`; otherwise a failure naming what differs, with the whole error.
inline ::testing::AssertionResult is_error(const torch_tensorrt::executorch_backend::Status& status, ExpectedCode code,
                                           std::initializer_list<std::string_view> parts) {
  namespace ex = torch_tensorrt::executorch_backend;
  if (status.ok()) {
    return ::testing::AssertionFailure() << "succeeded; expected "
                                         << (code ? ex::to_string(*code) : "an error") << " saying \""
                                         << (parts.size() > 0 ? *parts.begin() : "") << "\"";
  }
  if (code && status.code() != *code) {
    return ::testing::AssertionFailure() << "code " << ex::to_string(status.code()) << ", expected "
                                         << ex::to_string(*code) << "; the error: " << status.to_string();
  }
  for (std::string_view part : parts) {
    if (status.message().find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "the message does not say \"" << part
                                           << "\"; the error: " << status.to_string();
    }
  }
  return ::testing::AssertionSuccess();
}

template <typename T, typename... Parts>
::testing::AssertionResult is_error(const T& value, ExpectedCode code, const Parts&... parts) {
  return is_error(status_of(value), code, {std::string_view(parts)...});
}

/// The message of `value`'s status (a Status or a Result) does not contain `part`.
template <typename T>
::testing::AssertionResult says_nothing_of(const T& value, std::string_view part) {
  const auto status = status_of(value);
  if (status.message().find(part) == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the message says \"" << part << "\"; the error: " << status.to_string();
}

}  // namespace trtet_test

/// EXPECT/ASSERT that `expr` (a Status or a Result) is an error of `code` whose message contains
/// every part after it; more context may be streamed after, as with EXPECT_TRUE.
#define TRTET_EXPECT_ERROR(expr, code, ...) \
  EXPECT_TRUE(::trtet_test::is_error((expr), ::trtet_test::ExpectedCode(code), __VA_ARGS__))
#define TRTET_ASSERT_ERROR(expr, code, ...) \
  ASSERT_TRUE(::trtet_test::is_error((expr), ::trtet_test::ExpectedCode(code), __VA_ARGS__))
/// The same for an error of any code.
#define TRTET_EXPECT_ERROR_SAYS(expr, ...) \
  EXPECT_TRUE(::trtet_test::is_error((expr), ::trtet_test::ExpectedCode(), __VA_ARGS__))
/// EXPECT that the message of `expr` (a Status or a Result) does not contain `part`.
#define TRTET_EXPECT_ERROR_OMITS(expr, part) EXPECT_TRUE(::trtet_test::says_nothing_of((expr), (part)))
