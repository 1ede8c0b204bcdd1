// Status and Result: error values that cross every layer without exceptions.
//
// The types are the public ones (torch_tensorrt/executorch/Error.h: ErrorCode, Error, whose other
// name is Status, and Result<T>), so the library and its users speak one vocabulary; this header
// adds the helpers the library uses to build and pass them on.
#pragma once

#include <torch_tensorrt/executorch/Error.h>

#include <exception>
#include <string>
#include <utility>

namespace torch_tensorrt::executorch_backend {

/// Builds an error Status from a printf-style message.
Status make_error(ErrorCode code, const char* format, ...) __attribute__((format(printf, 2, 3)));

/// Runs `fn` (returning a Status or Result) and turns anything it throws into kInternal naming
/// `what` and the exception: no exception leaves an engine call, nor crosses into a runtime built
/// without exceptions.
template <typename Fn>
auto without_exceptions(const char* what, Fn&& fn) noexcept -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& error) {
    return make_error(ErrorCode::kInternal, "%s threw: %s", what, error.what());
  } catch (...) {
    return make_error(ErrorCode::kInternal, "%s threw a non-standard exception", what);
  }
}

}  // namespace torch_tensorrt::executorch_backend

#define TRTET_CONCAT_IMPL_(a, b) a##b
#define TRTET_CONCAT_(a, b) TRTET_CONCAT_IMPL_(a, b)

/// Returns the Status of `expr` from the enclosing function when it is an error.
#define TRTET_RETURN_IF_ERROR(expr)                                              \
  do {                                                                           \
    ::torch_tensorrt::executorch_backend::Status trtet_status_ = (expr);         \
    if (!trtet_status_.ok()) return trtet_status_;                               \
  } while (0)

/// Returns make_error(code, format, ...) from the enclosing function unless `cond` holds.
#define TRTET_CHECK_OR_RETURN(cond, code, ...)                                          \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      return ::torch_tensorrt::executorch_backend::make_error(                         \
          ::torch_tensorrt::executorch_backend::ErrorCode::code, __VA_ARGS__);          \
    }                                                                                   \
  } while (0)

#define TRTET_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

/// `lhs = value of expr`, or returns its error from the enclosing function.
#define TRTET_ASSIGN_OR_RETURN(lhs, expr) \
  TRTET_ASSIGN_OR_RETURN_IMPL_(TRTET_CONCAT_(trtet_result_, __LINE__), lhs, expr)
