#include "executorch/load_options.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "blob/weight_streaming_budget.h"
#include "common/escape.h"

namespace torch_tensorrt::executorch_backend {
namespace {

using ::executorch::runtime::BackendOption;
using ::executorch::runtime::CompileSpec;
using ::executorch::runtime::kMaxOptionValueLength;

bool key_is(const char* key, std::string_view wanted) { return key != nullptr && std::string_view(key) == wanted; }

Result<std::optional<std::uint64_t>> from_compile_specs(::executorch::runtime::ArrayRef<CompileSpec> specs) {
  std::optional<std::uint64_t> budget;
  for (const CompileSpec& spec : specs) {
    if (!key_is(spec.key, blob::kWeightStreamingBudgetKey)) continue;
    TRTET_CHECK_OR_RETURN(!budget.has_value(), kInvalidProgram, "compile spec \"%s\" appears more than once",
                          spec.key);
    TRTET_CHECK_OR_RETURN(spec.value.buffer != nullptr || spec.value.nbytes == 0, kInvalidProgram,
                          "compile spec \"%s\" has no value", spec.key);
    const std::string_view text(static_cast<const char*>(spec.value.buffer), spec.value.nbytes);
    TRTET_ASSIGN_OR_RETURN(const std::uint64_t value,
                           blob::parse_weight_streaming_budget(text, blob::BudgetSource::kCompileSpec));
    budget = value;
  }
  return budget;
}

Result<std::optional<std::uint64_t>> from_load_options(
    ::executorch::runtime::Span<const BackendOption> options) {
  std::optional<std::uint64_t> budget;
  for (const BackendOption& option : options) {
    if (!key_is(option.key, blob::kWeightStreamingBudgetKey)) continue;
    if (const int* number = std::get_if<int>(&option.value)) {
      TRTET_ASSIGN_OR_RETURN(const std::uint64_t value,
                             blob::parse_weight_streaming_budget(static_cast<std::int64_t>(*number)));
      budget = value;
    } else if (const auto* text = std::get_if<std::array<char, kMaxOptionValueLength>>(&option.value)) {
      const std::string_view view(text->data(), strnlen(text->data(), text->size()));
      TRTET_ASSIGN_OR_RETURN(const std::uint64_t value,
                             blob::parse_weight_streaming_budget(view, blob::BudgetSource::kLoadOption));
      budget = value;
    } else {
      return make_error(ErrorCode::kInvalidArgument,
                        "load-time option \"%s\" is a bool; give a byte count as an int or a decimal string",
                        option.key);
    }
  }
  return budget;
}

/// The largest staging budget in MiB: its byte count fits in 64 bits (and in size_t, checked on use).
constexpr std::uint64_t kMaxStagingBudgetMb = (std::uint64_t{1} << 44) - 1;

/// A whole number from `text`, exactly: one or more ASCII decimal digits, at most
/// kMaxStagingBudgetMb. `code` and `from` say what a bad value is and where it came from; `unit`
/// ("MiB", "bytes", "calls") is the one the messages name.
Result<std::uint64_t> parse_whole_number(std::string_view text, ErrorCode code, const char* from, const char* key,
                                         const char* unit) {
  const std::string shown = escape_for_message(text, 64);
  if (text.empty()) {
    return make_error(code, "%s \"%s\" is empty; it takes a whole number of %s >= 0", from, key, unit);
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return make_error(code, "%s \"%s\" is \"%s\"; it takes a whole number of %s >= 0 (decimal digits only)", from,
                        key, shown.c_str(), unit);
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value > kMaxStagingBudgetMb) {
      return make_error(code, "%s \"%s\" is \"%s\", more than the largest value, %llu %s", from, key, shown.c_str(),
                        static_cast<unsigned long long>(kMaxStagingBudgetMb), unit);
    }
  }
  return value;
}

/// A staging budget in MiB from `text` (parse_whole_number).
Result<std::uint64_t> parse_staging_budget_mb(std::string_view text, ErrorCode code, const char* from) {
  return parse_whole_number(text, code, from, kStagingBudgetMbKey, "MiB");
}

/// A load-time option counted in `unit`: an int >= 0, or a string of decimal digits (at most
/// kMaxStagingBudgetMb); kInvalidArgument naming `key` and the unit otherwise.
Result<std::uint64_t> option_whole_number(const BackendOption& option, const char* key, const char* unit) {
  if (const int* number = std::get_if<int>(&option.value)) {
    TRTET_CHECK_OR_RETURN(*number >= 0, kInvalidArgument,
                          "load-time option \"%s\" is %d; it takes a whole number of %s >= 0", key, *number, unit);
    return static_cast<std::uint64_t>(*number);
  }
  if (const auto* text = std::get_if<std::array<char, kMaxOptionValueLength>>(&option.value)) {
    const std::string_view view(text->data(), strnlen(text->data(), text->size()));
    return parse_whole_number(view, ErrorCode::kInvalidArgument, "load-time option", key, unit);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "load-time option \"%s\" is a bool; it takes a whole number of %s >= 0 (an int or a string of "
                    "decimal digits)",
                    key, unit);
}

Result<std::size_t> staging_budget_bytes(std::uint64_t mb, ErrorCode code, const char* from) {
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (mb > std::numeric_limits<std::size_t>::max() / kMiB) {
    return make_error(code, "%s \"%s\" is %llu MiB, more than this platform can address", from, kStagingBudgetMbKey,
                      static_cast<unsigned long long>(mb));
  }
  return static_cast<std::size_t>(mb * kMiB);
}

}  // namespace

Result<std::optional<std::string>> resolve_tensorrt_runtime(::executorch::runtime::Span<const BackendOption> options) {
  std::optional<std::string> runtime;
  for (const BackendOption& option : options) {
    if (!key_is(option.key, kTensorRTRuntimeKey)) continue;
    const auto* text = std::get_if<std::array<char, kMaxOptionValueLength>>(&option.value);
    TRTET_CHECK_OR_RETURN(text != nullptr, kInvalidArgument,
                          "load-time option \"%s\" is %s; give a string: a search order such as \"lean,dispatch\" "
                          "(full, lean, dispatch) or a TensorRT runtime library's path",
                          option.key, std::holds_alternative<bool>(option.value) ? "a bool" : "an int");
    std::string value(text->data(), strnlen(text->data(), text->size()));
    TRTET_CHECK_OR_RETURN(!value.empty(), kInvalidArgument,
                          "load-time option \"%s\" is empty; give a search order such as \"lean,dispatch\" or a path",
                          option.key);
    runtime = std::move(value);
  }
  return runtime;
}

Result<std::optional<bool>> resolve_allow_engine_host_code(::executorch::runtime::Span<const BackendOption> options) {
  std::optional<bool> allowed;
  for (const BackendOption& option : options) {
    if (!key_is(option.key, kAllowEngineHostCodeKey)) continue;
    if (const bool* flag = std::get_if<bool>(&option.value)) {
      allowed = *flag;
    } else if (const int* number = std::get_if<int>(&option.value); number != nullptr && (*number == 0 || *number == 1)) {
      allowed = *number == 1;
    } else {
      return make_error(ErrorCode::kInvalidArgument,
                        "load-time option \"%s\" takes a bool (or the int 0 or 1): true lets engines run native "
                        "code they carry (docs/SECURITY.md)",
                        option.key);
    }
  }
  return allowed;
}

Result<blob::ParseLimits> resolve_blob_limits(::executorch::runtime::Span<const BackendOption> options) {
  blob::ParseLimits limits;
  for (const BackendOption& option : options) {
    if (!key_is(option.key, blob::kMaxMetadataBytesOption)) continue;
    TRTET_ASSIGN_OR_RETURN(const std::uint64_t bytes, option_whole_number(option, blob::kMaxMetadataBytesOption, "bytes"));
    TRTET_CHECK_OR_RETURN(bytes > 0 && bytes <= std::numeric_limits<std::uint32_t>::max(), kInvalidArgument,
                          "load-time option \"%s\" is %llu; it takes 1 to 4294967295 bytes", option.key,
                          static_cast<unsigned long long>(bytes));
    limits.max_metadata_bytes = static_cast<std::size_t>(bytes);
  }
  return limits;
}

Result<std::uint32_t> resolve_profiling_gpu_every(::executorch::runtime::Span<const BackendOption> load_options) {
  constexpr std::uint64_t kMostEvery = 1000000;
  std::uint32_t every = 1;
  for (const BackendOption& option : load_options) {
    if (!key_is(option.key, kProfilingGpuEveryKey)) continue;
    TRTET_CHECK_OR_RETURN(!std::holds_alternative<bool>(option.value), kInvalidArgument,
                          "load-time option \"%s\" is a bool; it takes a whole number of calls, 1 to %llu (1: "
                          "time every call)",
                          option.key, static_cast<unsigned long long>(kMostEvery));
    TRTET_ASSIGN_OR_RETURN(const std::uint64_t n, option_whole_number(option, kProfilingGpuEveryKey, "calls"));
    TRTET_CHECK_OR_RETURN(n >= 1 && n <= kMostEvery, kInvalidArgument,
                          "load-time option \"%s\" is %llu; it takes a whole number of calls, 1 to %llu (1: time "
                          "every call)",
                          option.key, static_cast<unsigned long long>(n), static_cast<unsigned long long>(kMostEvery));
    every = static_cast<std::uint32_t>(n);
  }
  return every;
}

Result<delegate::SessionOptions> resolve_session_options(::executorch::runtime::ArrayRef<CompileSpec> compile_specs,
                                                        ::executorch::runtime::Span<const BackendOption> load_options) {
  delegate::SessionOptions options;
  bool baked_seen = false;
  for (const CompileSpec& spec : compile_specs) {
    if (!key_is(spec.key, kUseCudaGraphsKey)) continue;
    TRTET_CHECK_OR_RETURN(!baked_seen, kInvalidProgram, "compile spec \"%s\" appears more than once", spec.key);
    baked_seen = true;
    const std::string_view text(static_cast<const char*>(spec.value.buffer), spec.value.buffer != nullptr ? spec.value.nbytes : 0);
    if (text == "1" || text == "true" || text == "True") {
      options.use_cuda_graphs = true;
    } else if (text == "0" || text == "false" || text == "False") {
      options.use_cuda_graphs = false;
    } else {
      return make_error(ErrorCode::kInvalidProgram, "compile spec \"%s\" is \"%s\"; it takes 1, 0, true or false",
                        spec.key, escape_for_message(text, 64).c_str());
    }
  }
  std::optional<std::uint64_t> baked_budget_mb;
  for (const CompileSpec& spec : compile_specs) {
    if (!key_is(spec.key, kStagingBudgetMbKey)) continue;
    TRTET_CHECK_OR_RETURN(!baked_budget_mb.has_value(), kInvalidProgram, "compile spec \"%s\" appears more than once",
                          spec.key);
    const std::string_view text(static_cast<const char*>(spec.value.buffer), spec.value.buffer != nullptr ? spec.value.nbytes : 0);
    TRTET_ASSIGN_OR_RETURN(const std::uint64_t mb, parse_staging_budget_mb(text, ErrorCode::kInvalidProgram, "compile spec"));
    TRTET_ASSIGN_OR_RETURN(options.staging_budget_bytes,
                           staging_budget_bytes(mb, ErrorCode::kInvalidProgram, "compile spec"));
    baked_budget_mb = mb;
  }
  bool budget_given = false;
  std::uint64_t program_cap_mb = kDefaultMaxProgramStagingBudgetMb;
  for (const BackendOption& option : load_options) {
    if (key_is(option.key, kMaxProgramStagingBudgetMbKey)) {
      TRTET_ASSIGN_OR_RETURN(program_cap_mb, option_whole_number(option, kMaxProgramStagingBudgetMbKey, "MiB"));
      continue;
    }
    if (key_is(option.key, kStagingBudgetMbKey)) budget_given = true;
  }
  // Note [program's staging budget]: the budget pins host and device memory at load, so the
  // program's compile spec may ask for at most the application's cap; the application's own
  // load-time option staging_budget_mb is not capped, and overrides the compile spec.
  if (baked_budget_mb.has_value() && !budget_given && *baked_budget_mb > program_cap_mb) {
    return make_error(ErrorCode::kInvalidProgram,
                      "compile spec \"%s\" asks for %llu MiB of pinned staging, more than the %llu MiB a program may "
                      "ask for; the application may allow it with the load-time backend option %s, or set the budget "
                      "itself with the load-time option %s",
                      kStagingBudgetMbKey, static_cast<unsigned long long>(*baked_budget_mb),
                      static_cast<unsigned long long>(program_cap_mb), kMaxProgramStagingBudgetMbKey, kStagingBudgetMbKey);
  }
  for (const BackendOption& option : load_options) {
    if (key_is(option.key, kStagingBudgetMbKey)) {
      std::uint64_t mb = 0;
      if (const int* number = std::get_if<int>(&option.value)) {
        TRTET_CHECK_OR_RETURN(*number >= 0, kInvalidArgument,
                              "load-time option \"%s\" is %d; it takes a whole number of MiB >= 0 (0: no budget)",
                              option.key, *number);
        mb = static_cast<std::uint64_t>(*number);
      } else if (const auto* text = std::get_if<std::array<char, kMaxOptionValueLength>>(&option.value)) {
        const std::string_view view(text->data(), strnlen(text->data(), text->size()));
        TRTET_ASSIGN_OR_RETURN(mb, parse_staging_budget_mb(view, ErrorCode::kInvalidArgument, "load-time option"));
      } else {
        return make_error(ErrorCode::kInvalidArgument,
                          "load-time option \"%s\" is a bool; it takes a whole number of MiB >= 0 (an int or a "
                          "string of decimal digits)",
                          option.key);
      }
      TRTET_ASSIGN_OR_RETURN(options.staging_budget_bytes,
                             staging_budget_bytes(mb, ErrorCode::kInvalidArgument, "load-time option"));
      continue;
    }
    if (key_is(option.key, kUseCudaGraphsKey)) {
      if (const bool* flag = std::get_if<bool>(&option.value)) {
        options.use_cuda_graphs = *flag;
      } else if (const int* number = std::get_if<int>(&option.value); number != nullptr && (*number == 0 || *number == 1)) {
        options.use_cuda_graphs = *number == 1;
      } else {
        return make_error(ErrorCode::kInvalidArgument, "load-time option \"%s\" takes a bool (or the int 0 or 1)",
                          option.key);
      }
    } else if (key_is(option.key, kCudaGraphCacheSizeKey)) {
      const int* number = std::get_if<int>(&option.value);
      TRTET_CHECK_OR_RETURN(number != nullptr && *number >= 0, kInvalidArgument,
                            "load-time option \"%s\" takes an int >= 0 (graphs kept at most)", option.key);
      options.graph_cache_size = static_cast<std::size_t>(*number);
    }
  }
  return options;
}

Result<std::optional<std::uint64_t>> resolve_weight_streaming_budget(
    ::executorch::runtime::ArrayRef<CompileSpec> compile_specs,
    ::executorch::runtime::Span<const BackendOption> load_options) {
  TRTET_ASSIGN_OR_RETURN(const std::optional<std::uint64_t> baked, from_compile_specs(compile_specs));
  TRTET_ASSIGN_OR_RETURN(const std::optional<std::uint64_t> given, from_load_options(load_options));
  return given.has_value() ? given : baked;
}

}  // namespace torch_tensorrt::executorch_backend
