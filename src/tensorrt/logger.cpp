#include "tensorrt/logger.h"

#include <map>
#include <memory>
#include <mutex>

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

/// The last error or internal error TensorRT logged on this thread (TensorRT logs a failing API
/// call's reason from the calling thread).
thread_local std::string t_last_error;

}  // namespace

std::optional<LogLevel> log_level_of(nvinfer1::ILogger::Severity severity) noexcept {
  using Severity = nvinfer1::ILogger::Severity;
  switch (severity) {
    case Severity::kINTERNAL_ERROR: return LogLevel::kError;
    case Severity::kERROR: return LogLevel::kError;
    case Severity::kWARNING: return LogLevel::kWarning;
    case Severity::kINFO: return LogLevel::kDebug;
    case Severity::kVERBOSE: return std::nullopt;
  }
  return LogLevel::kWarning;  // a severity newer than these headers: shown, not lost
}

void Logger::log(Severity severity, nvinfer1::AsciiChar const* message) noexcept {
  const char* text = message != nullptr ? message : "(no message)";
  if (severity == Severity::kERROR || severity == Severity::kINTERNAL_ERROR) {
    try {
      t_last_error = text;
    } catch (...) {  // out of memory: keep logging, lose only the Status detail
      t_last_error.clear();
    }
  }
  const std::optional<LogLevel> level = log_level_of(severity);
  if (level.has_value()) executorch_backend::log(*level, "%s: %s", label_.c_str(), text);
}

Logger& logger() noexcept {
  static Logger* const instance = new Logger();  // never destroyed: see the class comment
  return *instance;
}

Logger& logger_for(const std::string& label) {
  static std::mutex mutex;
  static auto* loggers = new std::map<std::string, std::unique_ptr<Logger>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Logger>& slot = (*loggers)[label];
  if (slot == nullptr) slot = std::make_unique<Logger>(label);
  return *slot;
}

void clear_last_error() noexcept { t_last_error.clear(); }

std::string last_error_suffix() {
  if (t_last_error.empty()) return std::string();
  return ": " + t_last_error;
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
