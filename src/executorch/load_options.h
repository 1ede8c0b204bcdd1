// Reading the compile specs and load-time backend options TensorRTBackend::init() receives.
#pragma once

#include <executorch/runtime/backend/interface.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "delegate/session.h"

namespace torch_tensorrt::executorch_backend {

/// The weight-streaming budget for one init: the load-time backend option
/// `weight_streaming_budget` (an int, or a string of decimal digits) when given, else the compile
/// spec of the same key (decimal digits, baked into the program), else unset. A malformed option
/// (negative, non-numeric, a bool) is kInvalidArgument; a malformed or repeated compile spec is
/// kInvalidProgram; each message names the value and where it came from. The option is checked
/// even when the compile spec is absent, and the compile spec even when the option overrides it.
Result<std::optional<std::uint64_t>> resolve_weight_streaming_budget(
    ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs,
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// The load-time backend option that picks the TensorRT runtime library (EngineRequest::runtime_library).
inline constexpr const char* kTensorRTRuntimeKey = "tensorrt_runtime";

/// The load-time backend option `tensorrt_runtime`: which TensorRT runtime library to load, in
/// search order ("lean,dispatch", "full", or a library path), passed to the engine factory as
/// given (the TensorRT adapter parses it). Unset when absent; the last one wins when repeated.
/// kInvalidArgument for an int or bool value, or an empty string.
Result<std::optional<std::string>> resolve_tensorrt_runtime(
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// The keys of the delegate-graph options (Note [delegate graphs], delegate/graph_cache.h).
inline constexpr const char* kUseCudaGraphsKey = "use_cuda_graphs";
inline constexpr const char* kCudaGraphCacheSizeKey = "cuda_graph_cache_size";

/// The key of the staging budget (SessionOptions::staging_budget_bytes), in MiB.
inline constexpr const char* kStagingBudgetMbKey = "staging_budget_mb";

/// The session options for one init: `use_cuda_graphs` from the load-time option (a bool, or an
/// int 0/1) when given, else the compile spec of the same key ("1", "0", "true", "false", "True",
/// "False"), else off; `cuda_graph_cache_size` from the load-time option (an int >= 0; 0 keeps
/// none), else 16; `staging_budget_mb` from the load-time option (an int >= 0, or a string of
/// decimal digits) when given, else the compile spec of the same key (decimal digits), else 0 (no
/// budget), in MiB. A malformed option is kInvalidArgument, a malformed or repeated compile spec
/// kInvalidProgram, each naming the key and the value.
Result<delegate::SessionOptions> resolve_session_options(
    ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs,
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

}  // namespace torch_tensorrt::executorch_backend
