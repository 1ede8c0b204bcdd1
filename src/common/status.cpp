#include "common/status.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

namespace torch_tensorrt::executorch_backend {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk: return "Ok";
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kInvalidProgram: return "InvalidProgram";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kIncompatible: return "Incompatible";
    case ErrorCode::kNotSupported: return "NotSupported";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kMemoryAllocationFailed: return "MemoryAllocationFailed";
    case ErrorCode::kNoDevice: return "NoDevice";
    case ErrorCode::kInvalidState: return "InvalidState";
  }
  return "Unknown";
}

/// What a rejected split carries beyond its code and message (Error.h).
struct Error::SplitDetails {
  GreenContextLimits limits;
  std::vector<unsigned> closest_valid;
};

namespace {
const GreenContextLimits kNoLimits{};
const std::vector<unsigned> kNoCounts{};
}  // namespace

Error::Error(ErrorCode code, std::string message, GreenContextLimits limits, std::vector<unsigned> closest_valid)
    : code_(code), message_(std::move(message)) {
  if (code == ErrorCode::kInvalidArgument && (limits.device >= 0 || !closest_valid.empty())) {
    split_ = std::make_shared<SplitDetails>(SplitDetails{limits, std::move(closest_valid)});
  }
}

const GreenContextLimits& Error::limits() const noexcept { return split_ ? split_->limits : kNoLimits; }
const std::vector<unsigned>& Error::closest_valid() const noexcept {
  return split_ ? split_->closest_valid : kNoCounts;
}

std::string Error::to_string() const {
  if (ok()) return "Ok";
  return std::string(executorch_backend::to_string(code_)) + ": " + message_;
}

Status make_error(ErrorCode code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(message.data(), message.size() + 1, format, args);
  va_end(args);
  return Status(code, std::move(message));
}

}  // namespace torch_tensorrt::executorch_backend
