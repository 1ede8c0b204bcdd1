// Status and Result: error values that cross every layer without exceptions.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <variant>

namespace torch_tensorrt::executorch_backend {

/// What went wrong, grouped by meaning (docs/DESIGN.md, "Errors"): the ExecuTorch adapter maps each onto
/// executorch::runtime::Error one to one.
enum class ErrorCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,         ///< caller misuse: wrong stream device, arg count, shape, dtype
  kInvalidProgram,          ///< bad blob or engine contents
  kInternal,                ///< a CUDA or engine failure at run time
  kIncompatible,            ///< version or platform mismatch
  kNotSupported,            ///< a valid request this build or device cannot serve
  kNotFound,                ///< a named thing (binding, backend, symbol) is absent
  kMemoryAllocationFailed,  ///< host or device allocation failed
  kNoDevice,                ///< no usable CUDA device or driver
  kInvalidState,            ///< the object cannot take this call now (moved-from, destroyed)
};

/// A short stable name for `code`, e.g. "InvalidArgument".
const char* to_string(ErrorCode code) noexcept;

/// The outcome of an operation: kOk, or an error code with a message saying what failed.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == ErrorCode::kOk; }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// "<CodeName>: <message>", or "Ok".
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

/// Builds a Status from a printf-style message.
Status make_error(ErrorCode code, const char* format, ...) __attribute__((format(printf, 2, 3)));

/// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    if (std::get<1>(state_).ok()) {
      state_.template emplace<1>(ErrorCode::kInternal, "Result built from an Ok status without a value");
    }
  }

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  /// The error; Ok when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<1>(state_); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

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
