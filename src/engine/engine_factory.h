// Where engines come from: one process-wide factory, settable. Part of the engine seam, so an
// engine adapter (src/tensorrt) installs itself without knowing which runtime hosts it.
//
// The host (the ExecuTorch backend's init()) hands the factory the engine bytes of a processed
// blob, the blob's metadata, the weight-streaming budget and the runtime-library choice; the
// factory returns an engine whose bindings follow the blob's io_bindings order. The TensorRT
// adapter installs itself as the default where it is built; tests install their own. Without a
// factory, the ExecuTorch backend's init() fails with kNotSupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "blob/format.h"
#include "common/status.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend {

/// What the host knows about the engine to build. Every pointer is valid only during the call:
/// the processed blob is freed right after the factory returns, so an engine copies (or
/// deserializes) what it keeps.
struct EngineRequest {
  const std::uint8_t* engine_bytes = nullptr;  ///< the blob's serialized engine
  std::size_t engine_size = 0;
  const blob::Metadata* metadata = nullptr;    ///< the blob's metadata (io_bindings, aliased_io, ...)
  int device = 0;                              ///< metadata device_id: the CUDA device to build on
  /// Weight-streaming budget in bytes: the load-time option, else the compile spec; unset when
  /// neither names one.
  std::optional<std::uint64_t> weight_streaming_budget;
  const char* method_name = nullptr;           ///< the ExecuTorch method being loaded, when known
  /// Which runtime library serves the engine, in search order: the load-time backend option
  /// `tensorrt_runtime` (e.g. "lean,dispatch" or a path; the adapter parses it). Unset when the
  /// host was given none: the adapter then reads TRTET_TENSORRT_RUNTIME, else uses its default.
  std::optional<std::string> runtime_library;
  /// Whether the engine may run native code it carries (an embedded lean runtime, which the
  /// dispatch runtime runs; serialized plugin libraries): the load-time backend option
  /// `allow_engine_host_code`. Unset when the host was given none: the adapter then reads
  /// TRTET_ALLOW_ENGINE_HOST_CODE, else does not allow it (docs/SECURITY.md).
  std::optional<bool> allow_engine_host_code;
};

/// Builds an engine, or says why not (kNoDevice without a GPU: the method then loads and its
/// execute reports the missing device).
using EngineFactory = std::function<Result<engine::EnginePtr>(const EngineRequest& request)>;

/// Installs `factory` for every later init() in the process (an empty function removes it) and
/// returns the one it replaces. Thread-safe; methods already loaded keep their engines.
EngineFactory set_engine_factory(EngineFactory factory);

/// A copy of the installed factory (empty when none is installed). Thread-safe.
EngineFactory engine_factory();

/// Installs `factory` for a scope and restores the previous one after it (tests).
class ScopedEngineFactory {
 public:
  explicit ScopedEngineFactory(EngineFactory factory) : previous_(set_engine_factory(std::move(factory))) {}
  ~ScopedEngineFactory() { set_engine_factory(std::move(previous_)); }
  ScopedEngineFactory(const ScopedEngineFactory&) = delete;             // one restore per install
  ScopedEngineFactory& operator=(const ScopedEngineFactory&) = delete;  // likewise
  ScopedEngineFactory(ScopedEngineFactory&&) = delete;                  // tied to one scope
  ScopedEngineFactory& operator=(ScopedEngineFactory&&) = delete;       // likewise

 private:
  EngineFactory previous_;
};

}  // namespace torch_tensorrt::executorch_backend
