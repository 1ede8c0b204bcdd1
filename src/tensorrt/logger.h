// TensorRT's log sink: routes nvinfer1::ILogger messages to common/log.h and keeps the calling
// thread's last error, so a failed TensorRT call can report TensorRT's own reason in its Status.
#pragma once

#include <NvInferRuntime.h>

#include <optional>
#include <string>
#include <utility>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// The level a TensorRT severity is logged at; nullopt for messages that are dropped (kVERBOSE).
/// Internal errors and errors → kError, warnings → kWarning, info → kDebug (TensorRT's info is chatty).
std::optional<LogLevel> log_level_of(nvinfer1::ILogger::Severity severity) noexcept;

/// The ILogger a TensorRT runtime is created with: logs "<label>: <message>", the label naming the
/// library and version that speaks (e.g. "TensorRT 11.4.0 (lean runtime)"). Thread-safe, as TensorRT
/// requires. Instances are never destroyed (logger(), logger_for()), so an engine released during
/// static destruction, or a library that keeps its first logger, still has one.
class Logger final : public nvinfer1::ILogger {
 public:
  explicit Logger(std::string label = "TensorRT") : label_(std::move(label)) {}
  void log(Severity severity, nvinfer1::AsciiChar const* message) noexcept override;
  const std::string& label() const noexcept { return label_; }

 private:
  const std::string label_;
};

/// The process-wide logger labelled "TensorRT".
Logger& logger() noexcept;

/// The process-wide logger labelled `label`: one per label, made on first use. Thread-safe.
Logger& logger_for(const std::string& label);

/// Forgets the calling thread's last TensorRT error: call before a TensorRT call whose failure is reported.
void clear_last_error() noexcept;

/// ": <TensorRT's last error on this thread>", or "" when TensorRT reported none since clear_last_error().
/// For appending to a Status message.
std::string last_error_suffix();

}  // namespace torch_tensorrt::executorch_backend::tensorrt
