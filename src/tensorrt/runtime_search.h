// Which TensorRT runtime library to load, in what order: TensorRT's full runtime (libnvinfer),
// its lean runtime (libnvinfer_lean) or its dispatch runtime (libnvinfer_dispatch), or a library
// given by path. Pure: no TensorRT header, no dlopen; runtime_library.h loads what this names.
//
// Note [Runtime search order]
// The order comes from the load-time backend option `tensorrt_runtime` (EngineRequest::runtime_library)
// when given, else from the environment variable TRTET_TENSORRT_RUNTIME when set and not empty, else
// the default: "full,lean", or "full,lean,dispatch" where engine host code is allowed (Note [Engine
// host code]). It is a comma-separated list; each item is `full`, `lean`,
// `dispatch` (libnvinfer.so.N, libnvinfer_lean.so.N, libnvinfer_dispatch.so.N, N the major version
// of the headers the adapter was built against, looked up the way dlopen looks up a name), or a
// library's path (an item with a '/') or file name (an item with ".so"). The first that loads and
// serves the headers' version is used.
//
// Note [Engine host code]
// A TensorRT plan may carry native code that TensorRT loads into the process while deserializing it:
// the lean runtime a version-compatible plan embeds (which the dispatch runtime loads and runs), and
// plugin libraries serialized into the plan. Engine bytes come from the program, which is untrusted
// (docs/SECURITY.md), so that code runs only when the application allows it: the load-time backend
// option `allow_engine_host_code` (EngineRequest::allow_engine_host_code), else the environment
// variable TRTET_ALLOW_ENGINE_HOST_CODE ("1" allows, "0" or empty does not), else not allowed.
// Without it, every runtime gets setEngineHostCodeAllowed(false), the default search order leaves
// out the dispatch runtime (it runs nothing else), and an order that names it is refused, the
// message naming the option.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// The environment variable read when no load-time option names the runtime.
inline constexpr const char* kRuntimeEnvironmentVariable = "TRTET_TENSORRT_RUNTIME";
/// The order used when neither the option nor the environment names one.
inline constexpr const char* kDefaultRuntimeSearch = "full,lean";
/// The default order where engine host code is allowed (the dispatch runtime runs nothing else).
inline constexpr const char* kDefaultRuntimeSearchWithHostCode = "full,lean,dispatch";

/// The load-time backend option that allows engine host code (Note [Engine host code]).
inline constexpr const char* kAllowEngineHostCodeOption = "allow_engine_host_code";
/// The environment variable read when no load-time option says whether host code is allowed.
inline constexpr const char* kAllowEngineHostCodeEnvironmentVariable = "TRTET_ALLOW_ENGINE_HOST_CODE";

/// Whether engine host code is allowed, and who said so (for messages).
struct HostCodePolicy {
  bool allowed = false;
  std::string source;  ///< "load-time option allow_engine_host_code", "TRTET_ALLOW_ENGINE_HOST_CODE" or "default"
};

/// The policy for one engine: `option` (the load-time option) when set, else `environment` (the
/// value of TRTET_ALLOW_ENGINE_HOST_CODE, null when unset) when not empty, else not allowed. The
/// environment takes "1" or "0"; anything else is kInvalidArgument naming the variable.
Result<HostCodePolicy> choose_host_code_policy(std::optional<bool> option, const char* environment);

/// Which of TensorRT's runtimes a library is (kPath: given by the user, kind unknown).
enum class RuntimeKind { kFull, kLean, kDispatch, kPath };

/// "full", "lean", "dispatch" or "path".
const char* to_string(RuntimeKind kind) noexcept;

/// The library file TensorRT ships a runtime as: "libnvinfer.so.<major>", "libnvinfer_lean.so.<major>",
/// "libnvinfer_dispatch.so.<major>"; "" for kPath.
std::string runtime_file_name(RuntimeKind kind, int major);

/// The runtime a library file is, by its name: libnvinfer.so* → kFull, libnvinfer_lean.so* → kLean,
/// libnvinfer_dispatch.so* → kDispatch (any directory); kPath for any other name.
RuntimeKind runtime_kind_of_file(std::string_view path) noexcept;

/// One library to try: its kind and what dlopen is given (a file name or a path).
struct RuntimeCandidate {
  RuntimeKind kind = RuntimeKind::kFull;
  std::string file;

  bool operator==(const RuntimeCandidate& other) const { return kind == other.kind && file == other.file; }
};

/// The libraries to try, in order, and where the order came from (for messages).
struct RuntimeSearch {
  std::vector<RuntimeCandidate> candidates;
  std::string spec;    ///< the order as given, e.g. "lean,dispatch"
  std::string source;  ///< "load-time option tensorrt_runtime", "TRTET_TENSORRT_RUNTIME" or "default"
};

/// The candidates `spec` names for headers of major version `major`. Items are trimmed of spaces;
/// a repeated item is tried once. kInvalidArgument (naming the item and what is accepted) for an
/// empty spec or item, or a word other than full, lean and dispatch that is no path or file name.
Result<std::vector<RuntimeCandidate>> parse_runtime_search(std::string_view spec, int major);

/// The search for one engine: `option` (the load-time option) when set, else `environment` (the
/// value of TRTET_TENSORRT_RUNTIME, null when unset) when not empty, else kDefaultRuntimeSearch
/// (kDefaultRuntimeSearchWithHostCode when `host_code` allows it). Errors of parse_runtime_search,
/// with where the bad order came from; kInvalidArgument, naming allow_engine_host_code, for an
/// order with the dispatch runtime (`dispatch`, or a file named libnvinfer_dispatch.so*) when
/// `host_code` does not allow engine host code.
Result<RuntimeSearch> choose_runtime_search(const std::optional<std::string>& option, const char* environment,
                                            int major, const HostCodePolicy& host_code);

/// The refusal of the dispatch runtime without engine host code: kInvalidArgument naming
/// allow_engine_host_code and TRTET_ALLOW_ENGINE_HOST_CODE. `what` names the library and where it
/// came from.
Status dispatch_needs_host_code(const std::string& what);

/// "libnvinfer.so.11 (full), /x/libnvinfer_lean.so.11 (path)": the candidates, for messages.
std::string describe(const std::vector<RuntimeCandidate>& candidates);

}  // namespace torch_tensorrt::executorch_backend::tensorrt
