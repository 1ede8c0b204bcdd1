// What the executor's step files (executor.cpp, executor_capture.cpp, executor_concurrent.cpp)
// share: the failures they report and the call made as a step selects it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "contract_fuzz/executor.h"

namespace trtet_test::fuzz {

/// A failure of the harness itself (not of the delegate): `what` and the status.
Failure harness(const std::string& what, const ex::Status& status);

/// A failure of a capture's promise.
Failure capture_failure(const std::string& message);

/// execute() under a CudaStreamGuard on `stream` when `guard`, else with no selection.
ex::Status execute(ex::delegate::Session& session, ex::delegate::TensorView* views, std::size_t count, bool guard,
                   cudaStream_t stream);

}  // namespace trtet_test::fuzz
