#include "common/log.h"

#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/environment.h"
#include "common/escape.h"

namespace torch_tensorrt::executorch_backend {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "?";
}

/// Whether a TRTET_DEBUG value (or the deprecated TORCHTRT_ET_DEBUG) turns debug logging on: set,
/// not empty and not "0", "false", "off" or "no" (any case).
bool debug_logging_requested(const char* value) noexcept {
  if (value == nullptr || *value == '\0') return false;
  for (const char* off : {"0", "false", "off", "no"}) {
    if (strcasecmp(value, off) == 0) return false;
  }
  return true;
}

bool debug_enabled() {
  static const bool enabled = debug_logging_requested(read_environment(kDebugVariable));
  return enabled;
}

}  // namespace

void log(LogLevel level, const char* format, ...) {
  if (level == LogLevel::kDebug && !debug_enabled()) return;
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  // Messages quote names and text from programs and from TensorRT: no control sequence reaches the
  // terminal (docs/SECURITY.md).
  const std::string line = escape_for_message(buffer, sizeof(buffer));
  std::fprintf(stderr, "[torchtrt-et] %s: %s\n", level_name(level), line.c_str());
}

}  // namespace torch_tensorrt::executorch_backend
