// A TensorRT runtime library loaded at run time (dlopen), never linked: the backend library loads
// without any TensorRT, and which runtime serves the engines (full, lean or dispatch) is chosen when
// an engine is loaded (Note [Runtime search order] in runtime_search.h). No TensorRT header: the two
// entry points the adapter needs are declared here by their C signatures.
//
// Note [Runtime library lifetime]
// acquire_runtime_library() hands out one RuntimeLibrary per search order while any engine holds it;
// the last holder's release closes the library (dlclose), so a later engine loads it anew. An engine
// holds its library until its TensorRT objects are destroyed (they live in the library's code).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "tensorrt/runtime_search.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// One opened TensorRT runtime library. Immutable after load; thread-safe.
class RuntimeLibrary {
 public:
  /// createInferRuntime_INTERNAL: what nvinfer1::createInferRuntime(logger) calls, with the headers' version.
  using CreateRuntimeFn = void* (*)(void* logger, std::int32_t version);
  /// getInferLibVersion: major * 10000 + minor * 100 + patch.
  using VersionFn = std::int32_t (*)();

  ~RuntimeLibrary();  // dlclose
  RuntimeLibrary(const RuntimeLibrary&) = delete;             // owns a dlopen handle
  RuntimeLibrary& operator=(const RuntimeLibrary&) = delete;  // likewise

  /// Which runtime it is: the candidate's kind, or for a path the kind its file name shows.
  RuntimeKind kind() const noexcept { return kind_; }
  /// The file the dynamic loader opened (resolved path where the loader reports one).
  const std::string& path() const noexcept { return path_; }
  /// getInferLibVersion().
  std::int32_t version() const noexcept { return version_; }
  /// "11.4.0".
  std::string version_string() const;
  /// "TensorRT 11.4.0 (lean runtime)": how messages name the library serving an engine.
  std::string label() const;

  /// createInferRuntime_INTERNAL(logger, header_version): an nvinfer1::IRuntime*, or null (TensorRT
  /// logs why through `logger`).
  void* create_runtime(void* logger, std::int32_t header_version) const noexcept;

 private:
  friend Result<std::shared_ptr<const RuntimeLibrary>> load_runtime_library(const RuntimeSearch& search,
                                                                            std::int32_t header_version);
  RuntimeLibrary() = default;

  void* handle_ = nullptr;
  RuntimeKind kind_ = RuntimeKind::kPath;
  std::string path_;
  std::int32_t version_ = 0;
  CreateRuntimeFn create_ = nullptr;
};

/// Opens the first candidate of `search` that loads (dlopen RTLD_NOW | RTLD_LOCAL), exports both
/// entry points and serves headers of `header_version` (same major version, minor not older).
/// kNotSupported when no candidate could be opened, kIncompatible when one opened but none served;
/// the message lists every candidate tried with the loader's or the version check's reason.
Result<std::shared_ptr<const RuntimeLibrary>> load_runtime_library(const RuntimeSearch& search,
                                                                   std::int32_t header_version);

/// load_runtime_library through a process-wide cache: while a holder of the library for the same
/// candidates and headers lives, the same object is returned; otherwise the library is loaded (and
/// logged at info level: which file, which version, from which search order). Thread-safe.
Result<std::shared_ptr<const RuntimeLibrary>> acquire_runtime_library(const RuntimeSearch& search,
                                                                      std::int32_t header_version);

/// How many RuntimeLibrary objects are alive (libraries this process holds open through this module).
int open_runtime_library_count() noexcept;

/// "11.4.0" for getInferLibVersion()'s encoding.
std::string version_string(std::int32_t version);

}  // namespace torch_tensorrt::executorch_backend::tensorrt
