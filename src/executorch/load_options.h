// Reading the compile specs and load-time backend options TensorRTBackend::init() receives.
#pragma once

#include <executorch/runtime/backend/interface.h>

#include <cstdint>
#include <optional>
#include <string>

#include "blob/format.h"
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

/// The load-time backend option that lets engines run native code they carry (EngineRequest::
/// allow_engine_host_code; Note [Engine host code] in tensorrt/runtime_search.h; docs/SECURITY.md).
inline constexpr const char* kAllowEngineHostCodeKey = "allow_engine_host_code";

/// The load-time backend option `allow_engine_host_code`: a bool (or the int 0 or 1); the last one
/// wins when repeated; unset when absent (the adapter then reads TRTET_ALLOW_ENGINE_HOST_CODE,
/// else allows none). kInvalidArgument for another value. Only the application sets it: there is
/// no compile spec of this key, and one in a program is ignored.
Result<std::optional<bool>> resolve_allow_engine_host_code(
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// The blob parser's limits for one init (Note [Metadata limits] in blob/parse.h): the load-time
/// option max_blob_metadata_bytes (an int > 0, or a string of decimal digits, at most 4294967295)
/// raises or lowers the 1 MiB cap on a blob's metadata. kInvalidArgument for another value.
Result<blob::ParseLimits> resolve_blob_limits(
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// The load-time option that times the GPU of every N-th traced call only (Note [sampled GPU times]
/// in profiling.cpp).
inline constexpr const char* kProfilingGpuEveryKey = "profiling_gpu_every";

/// The load-time option `profiling_gpu_every`: an int >= 1 (or a string of decimal digits), at
/// most 1000000; 1 (every traced call timed) when absent; the last one wins when repeated.
/// kInvalidArgument for another value.
Result<std::uint32_t> resolve_profiling_gpu_every(
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// The keys of the delegate-graph options (Note [delegate graphs], delegate/graph_cache.h).
inline constexpr const char* kUseCudaGraphsKey = "use_cuda_graphs";
inline constexpr const char* kCudaGraphCacheSizeKey = "cuda_graph_cache_size";

/// The key of the staging budget (SessionOptions::staging_budget_bytes), in MiB.
inline constexpr const char* kStagingBudgetMbKey = "staging_budget_mb";
/// The load-time option that raises the most a program's compile spec staging_budget_mb may ask
/// for (MiB), and the default cap: the budget pins host and device memory at load.
inline constexpr const char* kMaxProgramStagingBudgetMbKey = "max_program_staging_budget_mb";
inline constexpr std::uint64_t kDefaultMaxProgramStagingBudgetMb = 256;

/// The session options for one init: `use_cuda_graphs` from the load-time option (a bool, or an
/// int 0/1) when given, else the compile spec of the same key ("1", "0", "true", "false", "True",
/// "False"), else off; `cuda_graph_cache_size` from the load-time option (an int >= 0; 0 keeps
/// none), else 16; `staging_budget_mb` from the load-time option (an int >= 0, or a string of
/// decimal digits) when given, else the compile spec of the same key (decimal digits), else 0 (no
/// budget), in MiB. The compile spec comes from the program, which may not make the runtime pin
/// arbitrary memory: when it takes effect (no load-time staging_budget_mb), it may ask for at most
/// kDefaultMaxProgramStagingBudgetMb MiB, or what the load-time option max_program_staging_budget_mb
/// allows; more is kInvalidProgram naming both options. A malformed option is kInvalidArgument, a
/// malformed or repeated compile spec kInvalidProgram, each naming the key and the value.
Result<delegate::SessionOptions> resolve_session_options(
    ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs,
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

}  // namespace torch_tensorrt::executorch_backend
