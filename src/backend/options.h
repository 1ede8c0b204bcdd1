// The options schema: every option the backend reads, with where it may come from, its type, unit,
// range, default and the field it fills. One table (options.cpp) drives the parsing of compile
// specs and load-time options, TensorRTBackend's get_option/set_option, and docs/OPTIONS.md
// (tests/executorch/options_page.cpp writes the page; ctest fails when the committed one differs).
#pragma once

#include <executorch/runtime/backend/interface.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "blob/format.h"
#include "common/status.h"
#include "session/session.h"

namespace torch_tensorrt::executorch_backend {

/// Where an option may be given (a bit set). A compile spec is baked into the program, which is
/// untrusted: a bad one is kInvalidProgram. A load-time option (ExecuTorch's LoadBackendOptionsMap
/// under "TensorRTBackend") and set_option come from the application: a bad one is
/// kInvalidArgument. A load-time option wins over the compile spec of the same key.
enum OptionSource : unsigned {
  kFromCompileSpec = 1u << 0,
  kFromLoadOption = 1u << 1,
  kFromSetOption = 1u << 2,  ///< TensorRTBackend::set_option: the process's default for later loads
  kFromEnvironment = 1u << 3,
};

enum class OptionType {
  kBool,         ///< a bool or the int 0/1; a compile spec "1", "0", "true", "false", "True", "False"
  kWholeNumber,  ///< an int or a string of decimal digits, within [min, max], in `unit`
  kText,         ///< a non-empty string
};

/// The options of one init, filled from the table.
struct DelegateOptions {
  delegate::SessionOptions session;                      ///< use_cuda_graphs, cuda_graph_cache_size, staging_budget_mb
  std::optional<std::uint64_t> weight_streaming_budget;  ///< bytes; unset: the engine's own choice
  std::optional<std::string> tensorrt_runtime;           ///< unset: TRTET_TENSORRT_RUNTIME, else the adapter's order
  std::optional<bool> allow_engine_host_code;            ///< unset: TRTET_ALLOW_ENGINE_HOST_CODE, else none
  blob::ParseLimits blob_limits;                         ///< max_blob_metadata_bytes
  std::uint32_t profiling_gpu_every = 1;
  std::uint64_t max_program_staging_budget_mb = 256;
};

/// A value as read from one source, before the row's range check.
struct OptionValue {
  bool flag = false;
  std::uint64_t number = 0;
  std::string_view text;
};

/// One row of the table.
struct OptionSpec {
  const char* key;
  unsigned sources;         ///< OptionSource bits
  OptionType type;
  const char* unit;         ///< of a whole number ("bytes", "MiB", "calls", ...); "" otherwise
  std::uint64_t min;        ///< of a whole number
  std::uint64_t max;
  const char* default_text; ///< what applies when it is not given, as the page says it
  const char* field;        ///< what it fills
  const char* environment;  ///< the environment variable, or null
  const char* meaning;      ///< one sentence for the page and for messages
  /// Stores a checked value into `options` (null for rows read elsewhere: environment only).
  Status (*fill)(DelegateOptions& options, const OptionValue& value, ErrorCode code);
  /// The current value in `options`, for get_option (null for rows without kFromSetOption).
  std::uint64_t (*read)(const DelegateOptions& options);
  const char* details;      ///< what it does, at length, for the page ("" for none)
};

/// The table, in the page's order.
::executorch::runtime::Span<const OptionSpec> option_table() noexcept;

/// The row of `key`, or null.
const OptionSpec* find_option(std::string_view key) noexcept;

/// The keys a load-time option may have, comma-separated (for messages).
std::string load_option_keys();

/// The options of one init: the process's defaults (set_option), then the compile specs (in the
/// table's order; a repeated one is kInvalidProgram), then the load-time options (the last of a
/// key wins). Compile specs of other keys are ignored (Torch-TensorRT writes its own); a load-time
/// option of another key is kInvalidArgument naming the known keys. Every value is checked even
/// where another source overrides it. A program's staging_budget_mb compile spec that takes effect
/// may ask for at most max_program_staging_budget_mb MiB.
Result<DelegateOptions> resolve_delegate_options(
    ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs,
    ::executorch::runtime::Span<const ::executorch::runtime::BackendOption> load_options);

/// TensorRTBackend::set_option: each option must be a key whose row has kFromSetOption, with a good
/// value; all are checked before any is applied (a bad one changes nothing). Applies to methods
/// loaded afterwards; loaded ones keep theirs.
Status set_process_options(::executorch::runtime::Span<const ::executorch::runtime::BackendOption> options);

/// TensorRTBackend::get_option: fills each option's value with the current process default of its
/// key (an int, or a string of digits when the value does not fit an int). A key without
/// kFromSetOption is kInvalidArgument.
Status get_process_options(::executorch::runtime::Span<::executorch::runtime::BackendOption> options);

/// Puts the process defaults back to the table's (tests).
void reset_process_options() noexcept;

}  // namespace torch_tensorrt::executorch_backend
