// The process's environment variables, all named TRTET_<NAME> (docs/OPTIONS.md lists them).
#pragma once

namespace torch_tensorrt::executorch_backend {

/// The environment variables the library reads, each in one place (docs/OPTIONS.md, the table in
/// backend/options.cpp). tensorrt/runtime_search.h names the two the TensorRT adapter reads.
inline constexpr const char* kDebugVariable = "TRTET_DEBUG";
inline constexpr const char* kCudaAllocatorVariable = "TRTET_CUDA_ALLOCATOR";
inline constexpr const char* kCopyWorkersVariable = "TRTET_COPY_WORKERS";
inline constexpr const char* kSmallCopiesVariable = "TRTET_SMALL_COPIES";

/// The prefix every variable has, and the one older releases used for some of them.
inline constexpr const char* kEnvironmentPrefix = "TRTET_";
inline constexpr const char* kDeprecatedEnvironmentPrefix = "TORCHTRT_ET_";

/// The value of the variable `name` (which starts with kEnvironmentPrefix), or null when unset.
/// When it is unset and the same name under kDeprecatedEnvironmentPrefix is set, that value, with
/// a warning naming both the first time this process reads it. The new name wins when both are set.
const char* read_environment(const char* name) noexcept;

}  // namespace torch_tensorrt::executorch_backend
