#include "executorch/load_options.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <variant>

#include "blob/weight_streaming_budget.h"

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

/// A staging budget in MiB from `text`, exactly its bytes: one or more ASCII decimal digits, at
/// most kMaxStagingBudgetMb. `code` and `from` say what a bad value is and where it came from.
Result<std::uint64_t> parse_staging_budget_mb(std::string_view text, ErrorCode code, const char* from) {
  const int shown = static_cast<int>(std::min<std::size_t>(text.size(), 64));
  if (text.empty()) {
    return make_error(code, "%s \"%s\" is empty; it takes a whole number of MiB >= 0", from, kStagingBudgetMbKey);
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return make_error(code, "%s \"%s\" is \"%.*s\"; it takes a whole number of MiB >= 0 (decimal digits only)",
                        from, kStagingBudgetMbKey, shown, text.data());
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value > kMaxStagingBudgetMb) {
      return make_error(code, "%s \"%s\" is \"%.*s\", more than the largest budget, %llu MiB", from,
                        kStagingBudgetMbKey, shown, text.data(), static_cast<unsigned long long>(kMaxStagingBudgetMb));
    }
  }
  return value;
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
      return make_error(ErrorCode::kInvalidProgram, "compile spec \"%s\" is \"%.*s\"; it takes 1, 0, true or false",
                        spec.key, static_cast<int>(text.size()), text.data());
    }
  }
  bool budget_baked = false;
  for (const CompileSpec& spec : compile_specs) {
    if (!key_is(spec.key, kStagingBudgetMbKey)) continue;
    TRTET_CHECK_OR_RETURN(!budget_baked, kInvalidProgram, "compile spec \"%s\" appears more than once", spec.key);
    budget_baked = true;
    const std::string_view text(static_cast<const char*>(spec.value.buffer), spec.value.buffer != nullptr ? spec.value.nbytes : 0);
    TRTET_ASSIGN_OR_RETURN(const std::uint64_t mb, parse_staging_budget_mb(text, ErrorCode::kInvalidProgram, "compile spec"));
    TRTET_ASSIGN_OR_RETURN(options.staging_budget_bytes,
                           staging_budget_bytes(mb, ErrorCode::kInvalidProgram, "compile spec"));
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
