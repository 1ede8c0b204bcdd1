// Minimal leveled logging to stderr for conditions a caller cannot receive as a Status.
#pragma once

namespace torch_tensorrt::executorch_backend {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

/// Writes "[torchtrt-et] <level> <message>" to stderr; Debug only when TRTET_DEBUG is set.
void log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace torch_tensorrt::executorch_backend
