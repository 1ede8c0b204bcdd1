#include "executorch/load_options.h"

#include <cstring>
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
  for (const BackendOption& option : load_options) {
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
