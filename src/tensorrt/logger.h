// TensorRT's log sink: routes nvinfer1::ILogger messages to common/log.h and keeps the calling
// thread's last error, so a failed TensorRT call can report TensorRT's own reason in its Status.
#pragma once

#include <NvInferRuntime.h>

#include <optional>
#include <string>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// The level a TensorRT severity is logged at; nullopt for messages that are dropped (kVERBOSE).
/// Internal errors and errors → kError, warnings → kWarning, info → kDebug (TensorRT's info is chatty).
std::optional<LogLevel> log_level_of(nvinfer1::ILogger::Severity severity) noexcept;

/// The ILogger every TensorRT runtime of this process is created with. Thread-safe, as TensorRT
/// requires. One instance lives for the whole process (never destroyed, so an engine released during
/// static destruction still has its logger).
class Logger final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, nvinfer1::AsciiChar const* message) noexcept override;
};

/// The process-wide logger.
Logger& logger() noexcept;

/// Forgets the calling thread's last TensorRT error: call before a TensorRT call whose failure is reported.
void clear_last_error() noexcept;

/// ": <TensorRT's last error on this thread>", or "" when TensorRT reported none since clear_last_error().
/// For appending to a Status message.
std::string last_error_suffix();

}  // namespace torch_tensorrt::executorch_backend::tensorrt
