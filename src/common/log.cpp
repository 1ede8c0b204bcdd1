#include "common/log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

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

bool debug_enabled() {
  static const bool enabled = std::getenv("TORCHTRT_ET_DEBUG") != nullptr;
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
  std::fprintf(stderr, "[torchtrt-et] %s: %s\n", level_name(level), buffer);
}

}  // namespace torch_tensorrt::executorch_backend
