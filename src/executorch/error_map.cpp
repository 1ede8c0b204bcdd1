#include "executorch/error_map.h"

#include <cstdint>

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
  // ExecuTorch logs the returned code itself; its log line holds ~250 characters, so the message goes first.
  // Names in the message come from the program: escaped, so a terminal sees no control bytes.
  ET_LOG(Error, "TensorRTBackend %s: %s", what, escape_for_message(status.to_string(), SIZE_MAX).c_str());
  return error;
}

}  // namespace torch_tensorrt::executorch_backend
