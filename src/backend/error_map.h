// Project errors as ExecuTorch errors, by meaning (docs/DESIGN.md, "Errors"), and reporting through ExecuTorch's log.
#pragma once

#include <executorch/runtime/core/error.h>

#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend {

/// The phase of the delegate a status comes from: allocation failures are reported as the
/// delegate's own at init (DelegateMemoryAllocationFailed), as the runtime's at execute.
enum class DelegatePhase { kInit, kExecute };

/// The executorch::runtime::Error meaning the same as `code` (the table in ErrorCode's comments,
/// torch_tensorrt/executorch/Error.h; tests/executorch/backend_test.cpp checks each):
/// kInvalidArgument → InvalidArgument, kInvalidProgram → InvalidProgram, kInternal → Internal,
/// kIncompatible → DelegateInvalidCompatibility, kNotSupported → NotSupported, kNotFound → NotFound,
/// kMemoryAllocationFailed → DelegateMemoryAllocationFailed (init) / MemoryAllocationFailed (execute),
/// kNoDevice → AccessFailed (the GPU is a resource that cannot be reached), kInvalidState → InvalidState.
::executorch::runtime::Error to_executorch_error(ErrorCode code, DelegatePhase phase) noexcept;

/// The most bytes one ET_LOG line from report() holds, its prefix included: ExecuTorch formats a log
/// line into 256 bytes (the last is the terminating NUL) and cuts the rest.
inline constexpr std::size_t kLogLine = 255;

/// Logs `status` through ExecuTorch's log (ET_LOG, so the application's PAL sees it), prefixed
/// with "TensorRTBackend <what>: ", and returns its mapped Error. Ok stays Ok and logs nothing. A
/// message longer than a line holds goes out as several lines ("TensorRTBackend <what> (continued): ..."),
/// each whole, so no part of it is cut.
::executorch::runtime::Error report(const Status& status, DelegatePhase phase, const char* what) noexcept;

}  // namespace torch_tensorrt::executorch_backend
