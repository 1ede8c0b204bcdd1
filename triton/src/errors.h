// The backend's errors and logging (errors.cpp): Triton errors whose message names the backend, the
// server's log, and the errors ExecuTorch and the delegate log while a thread runs a call.
#pragma once

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/platform/platform.h>
#include <torch_tensorrt/executorch/Error.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "trtet_triton/triton_api.h"

namespace trtet_triton {

namespace et = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;

constexpr const char* kBackend = "torchtrt_executorch";

// Note [untrusted text in messages]
// ---------------------------------
// A model's config, the files it names, its program and the requests that reach the server are
// untrusted, and their text (a parameter's key or value, a path, a tensor's name, what the delegate
// logs about a program) goes into the backend's errors and log lines. Every message the backend
// hands the server, an error's, a log line's, an ExecuTorch log line's, is written once more here on
// its way out: each control character (a newline, an escape sequence's ESC, DEL, UTF-8's C1 controls),
// each backslash and each byte that is not part of well-formed UTF-8 as \xNN, and cut after at most
// kMessageLimit bytes, never inside a character, with "...". So no config can forge a line of the
// server's log or send a terminal's control sequence to whoever reads it, no message is unbounded,
// and every message is valid UTF-8: Triton keeps a failed load's message in its repository index,
// JSON that its clients decode as UTF-8, so one byte of a damaged program quoted raw (ExecuTorch logs
// a backend id it cannot find) made the whole index unreadable to them. The backend's own messages
// hold none of those bytes, and pass unchanged.
constexpr std::size_t kMessageLimit = 16384;

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// "<backend>: <message>" as it goes to the server (Note [untrusted text in messages]).
std::string message_text(const std::string& message);
TRITONSERVER_Error* error(TRITONSERVER_Error_Code code, const std::string& message);
TRITONSERVER_Error_Code triton_code(et::ErrorCode code);
void log(TRITONSERVER_LogLevel level, const std::string& message);

#define TRTET_TRITON_RETURN_IF_ERROR(expr) \
  do {                                     \
    TRITONSERVER_Error* trtet_e_ = (expr); \
    if (trtet_e_ != nullptr) return trtet_e_; \
  } while (0)

void executorch_log(et_timestamp_t, et_pal_log_level_t level, const char* filename, const char*, size_t line,
                    const char* message, size_t length);
std::string take_executorch_errors();
std::string executorch_failure(const std::string& what, etr::Error code);
std::uint64_t now_ns();

}  // namespace trtet_triton
