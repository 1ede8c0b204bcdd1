#include "errors.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>

#include "common/escape.h"

namespace trtet_triton {

// ---- errors and logging ----

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char small[512];
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  std::string text;
  if (n >= 0 && static_cast<std::size_t>(n) < sizeof small) {
    text.assign(small, static_cast<std::size_t>(n));
  } else if (n >= 0) {
    text.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(text.data(), text.size(), fmt, args);
    text.resize(static_cast<std::size_t>(n));
  }
  va_end(args);
  return text;
}

std::string message_text(const std::string& message) {
  return et::escape_for_message(std::string(kBackend) + ": " + message, kMessageLimit);
}

// A Triton error whose message starts with the backend's name, so a user reading the server's log
// or a client's exception knows which part refused.
TRITONSERVER_Error* error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message_text(message).c_str());
}

TRITONSERVER_Error_Code triton_code(et::ErrorCode code) {
  switch (code) {
    case et::ErrorCode::kInvalidArgument:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case et::ErrorCode::kNotSupported:
    case et::ErrorCode::kNoDevice:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

void log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message_text(message).c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

namespace {

// The errors ExecuTorch and the delegate log while this thread runs a call (ExecuTorch reports a
// status code; the reason is in its log), so a failed load or request carries the delegate's message.
thread_local std::string t_executorch_errors;

}  // namespace

void executorch_log(et_timestamp_t, et_pal_log_level_t level, const char* filename, const char*, size_t line,
                    const char* message, size_t length) {
  std::string text(message, length);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const bool is_error = level == kError || level == kFatal;
  if (is_error) {
    if (t_executorch_errors.size() < 8192) t_executorch_errors += (t_executorch_errors.empty() ? "" : "; ") + text;
  }
  const TRITONSERVER_LogLevel triton_level = is_error ? TRITONSERVER_LOG_ERROR : level == kInfo ? TRITONSERVER_LOG_INFO
                                                                                                : TRITONSERVER_LOG_VERBOSE;
  if (!TRITONSERVER_LogIsEnabled(triton_level)) return;
  const std::string line_text =
      et::escape_for_message(format("executorch %s:%zu: %s", filename, line, text.c_str()), kMessageLimit);
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(triton_level, __FILE__, __LINE__, line_text.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

std::string take_executorch_errors() {
  std::string text = std::move(t_executorch_errors);
  t_executorch_errors.clear();
  return text;
}

std::string executorch_failure(const std::string& what, etr::Error code) {
  std::string reasons = take_executorch_errors();
  return format("%s: ExecuTorch error %s (0x%x)%s%s", what.c_str(), etr::to_string(code), static_cast<unsigned>(code),
                reasons.empty() ? "" : ": ", reasons.c_str());
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace trtet_triton
