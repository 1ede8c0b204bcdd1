#include "backend/error_map.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/escape.h"

#include <executorch/runtime/platform/log.h>

namespace torch_tensorrt::executorch_backend {

// Error alone is this library's (Error.h); ExecuTorch's is named in full.
using EtError = ::executorch::runtime::Error;

EtError to_executorch_error(ErrorCode code, DelegatePhase phase) noexcept {
  switch (code) {
    case ErrorCode::kOk: return EtError::Ok;
    case ErrorCode::kInvalidArgument: return EtError::InvalidArgument;
    case ErrorCode::kInvalidProgram: return EtError::InvalidProgram;
    case ErrorCode::kInternal: return EtError::Internal;
    case ErrorCode::kIncompatible: return EtError::DelegateInvalidCompatibility;
    case ErrorCode::kNotSupported: return EtError::NotSupported;
    case ErrorCode::kNotFound: return EtError::NotFound;
    case ErrorCode::kMemoryAllocationFailed:
      return phase == DelegatePhase::kInit ? EtError::DelegateMemoryAllocationFailed : EtError::MemoryAllocationFailed;
    case ErrorCode::kNoDevice: return EtError::AccessFailed;
    case ErrorCode::kInvalidState: return EtError::InvalidState;
  }
  return EtError::Internal;
}

EtError report(const Status& status, DelegatePhase phase, const char* what) noexcept {
  if (status.ok()) return EtError::Ok;
  const EtError error = to_executorch_error(status.code(), phase);
  // Names in the message come from the program: escaped, so a terminal sees no control bytes.
  const std::string text = escape_for_message(status.to_string(), SIZE_MAX);
  // ExecuTorch's log line holds kLogLine bytes and cuts the rest: a longer message goes out in parts,
  // each cut after a space where one is near, so none of it (the cause at its end least of all) is lost.
  const std::string first = std::string("TensorRTBackend ") + what + ": ";
  const std::string later = std::string("TensorRTBackend ") + what + " (continued): ";
  std::size_t at = 0;
  do {
    const std::string& prefix = at == 0 ? first : later;
    const std::size_t room = kLogLine > prefix.size() + 16 ? kLogLine - prefix.size() : 16;
    std::size_t part = std::min(room, text.size() - at);
    if (at + part < text.size()) {
      const std::size_t space = text.rfind(' ', at + part - 1);
      if (space != std::string::npos && space > at + part / 2) part = space + 1 - at;
    }
    ET_LOG(Error, "%s%.*s", prefix.c_str(), static_cast<int>(part), text.c_str() + at);
    at += part;
  } while (at < text.size());
  return error;
}

}  // namespace torch_tensorrt::executorch_backend
