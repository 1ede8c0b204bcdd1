// The test-engine factory for whole programs: installs the test engines (Note [test engine spec])
// as the process's engine factory and keeps track of the live engines that record SMs, so a
// runner (trtet-run, the Python and Triton suites through the plugin) can ask where the engines'
// kernels ran.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"

namespace trtet_test {

namespace ex = torch_tensorrt::executorch_backend;

/// Installs the test-engine factory for the rest of the process: a program's engine bytes are a
/// test-engine spec.
ex::Status install_recording_test_engine_factory();

/// Forgets what the live engines recorded so far; their work must be complete. Ok when no engine
/// records SMs.
ex::Status clear_engine_sms();

/// The SM ids (sorted, unique) the live engines' kernels ran on since clear_engine_sms(), once
/// their work is complete; std::nullopt when no live engine records SMs.
ex::Result<std::optional<std::vector<int>>> engine_sms();

}  // namespace trtet_test
