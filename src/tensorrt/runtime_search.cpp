#include "tensorrt/runtime_search.h"

#include <algorithm>

#include "common/escape.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<RuntimeCandidate> parse_item(std::string_view item, int major) {
  if (item == "full") return RuntimeCandidate{RuntimeKind::kFull, runtime_file_name(RuntimeKind::kFull, major)};
  if (item == "lean") return RuntimeCandidate{RuntimeKind::kLean, runtime_file_name(RuntimeKind::kLean, major)};
  if (item == "dispatch") {
    return RuntimeCandidate{RuntimeKind::kDispatch, runtime_file_name(RuntimeKind::kDispatch, major)};
  }
  if (item.find('/') != std::string_view::npos || item.find(".so") != std::string_view::npos) {
    return RuntimeCandidate{RuntimeKind::kPath, std::string(item)};
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "\"%s\" names no TensorRT runtime: give full, lean, dispatch, a library path (with a '/') or a "
                    "library file name (with \".so\")",
                    escape_for_message(item, 256).c_str());
}

}  // namespace

const char* to_string(RuntimeKind kind) noexcept {
  switch (kind) {
    case RuntimeKind::kFull: return "full";
    case RuntimeKind::kLean: return "lean";
    case RuntimeKind::kDispatch: return "dispatch";
    case RuntimeKind::kPath: return "path";
  }
  return "?";
}

std::string runtime_file_name(RuntimeKind kind, int major) {
  const std::string suffix = ".so." + std::to_string(major);
  switch (kind) {
    case RuntimeKind::kFull: return "libnvinfer" + suffix;
    case RuntimeKind::kLean: return "libnvinfer_lean" + suffix;
    case RuntimeKind::kDispatch: return "libnvinfer_dispatch" + suffix;
    case RuntimeKind::kPath: break;
  }
  return std::string();
}

RuntimeKind runtime_kind_of_file(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const auto starts = [name](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  if (starts("libnvinfer.so")) return RuntimeKind::kFull;
  if (starts("libnvinfer_lean.so")) return RuntimeKind::kLean;
  if (starts("libnvinfer_dispatch.so")) return RuntimeKind::kDispatch;
  return RuntimeKind::kPath;
}

Result<std::vector<RuntimeCandidate>> parse_runtime_search(std::string_view spec, int major) {
  TRTET_CHECK_OR_RETURN(!trim(spec).empty(), kInvalidArgument,
                        "the TensorRT runtime search order is empty: give a comma-separated list of full, lean, "
                        "dispatch or library paths, e.g. \"lean,dispatch\"");
  std::vector<RuntimeCandidate> candidates;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = trim(spec.substr(start, comma - start));
    TRTET_CHECK_OR_RETURN(!item.empty(), kInvalidArgument,
                          "the TensorRT runtime search order \"%s\" has an empty item (at offset %zu)",
                          escape_for_message(spec, 256).c_str(), start);
    TRTET_ASSIGN_OR_RETURN(RuntimeCandidate candidate, parse_item(item, major));
    if (std::find(candidates.begin(), candidates.end(), candidate) == candidates.end()) {
      candidates.push_back(std::move(candidate));
    }
    start = comma + 1;
  }
  return candidates;
}

Result<HostCodePolicy> choose_host_code_policy(std::optional<bool> option, const char* environment) {
  HostCodePolicy policy;
  if (option.has_value()) {
    policy.allowed = *option;
    policy.source = std::string("load-time option ") + kAllowEngineHostCodeOption;
  } else if (environment != nullptr && *environment != '\0') {
    const std::string_view value(environment);
    TRTET_CHECK_OR_RETURN(value == "1" || value == "0", kInvalidArgument,
                          "%s is \"%s\"; it takes 1 (engines may run host code they carry) or 0",
                          kAllowEngineHostCodeEnvironmentVariable, escape_for_message(value, 64).c_str());
    policy.allowed = value == "1";
    policy.source = kAllowEngineHostCodeEnvironmentVariable;
  } else {
    policy.source = "default";
  }
  return policy;
}

Status dispatch_needs_host_code(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument,
                    "%s: the dispatch runtime runs only engines that carry their own lean runtime, native code that "
                    "TensorRT loads into the process from the engine bytes; engine host code is off unless the "
                    "application allows it with the load-time backend option %s=true (or %s=1)",
                    what.c_str(), kAllowEngineHostCodeOption, kAllowEngineHostCodeEnvironmentVariable);
}

Result<RuntimeSearch> choose_runtime_search(const std::optional<std::string>& option, const char* environment,
                                            int major, const HostCodePolicy& host_code) {
  RuntimeSearch search;
  if (option.has_value()) {
    search.spec = *option;
    search.source = "load-time option tensorrt_runtime";
  } else if (environment != nullptr && *environment != '\0') {
    search.spec = environment;
    search.source = kRuntimeEnvironmentVariable;
  } else {
    search.spec = host_code.allowed ? kDefaultRuntimeSearchWithHostCode : kDefaultRuntimeSearch;
    search.source = "default";
  }
  Result<std::vector<RuntimeCandidate>> candidates = parse_runtime_search(search.spec, major);
  if (!candidates.ok()) {
    return make_error(ErrorCode::kInvalidArgument, "%s (from %s)", candidates.status().message().c_str(),
                      search.source.c_str());
  }
  search.candidates = std::move(candidates).value();
  if (!host_code.allowed) {
    for (const RuntimeCandidate& candidate : search.candidates) {
      const bool dispatch = candidate.kind == RuntimeKind::kDispatch ||
                            (candidate.kind == RuntimeKind::kPath && runtime_kind_of_file(candidate.file) == RuntimeKind::kDispatch);
      if (dispatch) {
        return dispatch_needs_host_code("the TensorRT runtime search order \"" + escape_for_message(search.spec, 256) +
                                        "\" (from " + search.source + ") names " + candidate.file);
      }
    }
  }
  return search;
}

std::string describe(const std::vector<RuntimeCandidate>& candidates) {
  std::string text;
  for (const RuntimeCandidate& candidate : candidates) {
    if (!text.empty()) text += ", ";
    text += candidate.file + " (" + to_string(candidate.kind) + ")";
  }
  return text;
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
