// Where trtet-run's engines come from, and what they let it observe.
//
// By default the library's installed engine factory builds them (the TensorRT adapter where it is
// built). --test-engines installs the project's test-engine factory instead (tests/engines): the
// programs tests/ generates carry test-engine specs as engine bytes, and with record_sms=1 those
// engines record the SM of every block they run, which the runner reports.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"

namespace trtet_run {

namespace ex = torch_tensorrt::executorch_backend;

/// Whether this build has the test engines (built with the test tree).
bool have_test_engines();

/// Installs the test-engine factory for the rest of the process. kNotSupported without test engines.
ex::Status install_test_engine_factory();

/// Forgets what the engines recorded so far; their work must be complete. Nothing to do (Ok) when
/// no engine records SMs.
ex::Status clear_engine_sms();

/// The SM ids the engines' kernels ran on since clear_engine_sms(), once their work is complete;
/// std::nullopt when no engine built here records SMs (a TensorRT engine does not).
ex::Result<std::optional<std::vector<int>>> engine_sms();

}  // namespace trtet_run
