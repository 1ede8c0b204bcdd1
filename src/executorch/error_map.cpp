#include "executorch/error_map.h"

#include <executorch/runtime/platform/log.h>

namespace torch_tensorrt::executorch_backend {

using ::executorch::runtime::Error;

Error to_executorch_error(ErrorCode code, DelegatePhase phase) noexcept {
  switch (code) {
    case ErrorCode::kOk: return Error::Ok;
    case ErrorCode::kInvalidArgument: return Error::InvalidArgument;
    case ErrorCode::kInvalidProgram: return Error::InvalidProgram;
    case ErrorCode::kInternal: return Error::Internal;
    case ErrorCode::kIncompatible: return Error::DelegateInvalidCompatibility;
    case ErrorCode::kNotSupported: return Error::NotSupported;
    case ErrorCode::kNotFound: return Error::NotFound;
    case ErrorCode::kMemoryAllocationFailed:
      return phase == DelegatePhase::kInit ? Error::DelegateMemoryAllocationFailed : Error::MemoryAllocationFailed;
    case ErrorCode::kNoDevice: return Error::AccessFailed;
    case ErrorCode::kInvalidState: return Error::InvalidState;
  }
  return Error::Internal;
}

Error report(const Status& status, DelegatePhase phase, const char* what) noexcept {
  if (status.ok()) return Error::Ok;
  const Error error = to_executorch_error(status.code(), phase);
  // ExecuTorch logs the returned code itself; its log line holds ~250 characters, so the message goes first.
  ET_LOG(Error, "TensorRTBackend %s: %s", what, status.to_string().c_str());
  return error;
}

}  // namespace torch_tensorrt::executorch_backend
