// What a processed blob's metadata JSON carries (the TR01/TR02 format Torch-TensorRT writes), as
// an engine factory sees it (EngineRequest::metadata, Engine.h). Part of the engine API: versioned
// with it (TORCHTRT_EXECUTORCH_ENGINE_API_VERSION). The library parses and checks the JSON; the
// layout and the defaults a reader applies are in docs/DESIGN.md, "The processed blob".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torch_tensorrt::executorch_backend::blob {

/// Why an output shares its memory with an input.
enum class AliasKind {
  kKvCacheUpdate,  ///< enforced by TensorRT (IKVCacheUpdateLayer); the engine reports the pair
  kUser,           ///< declared by Torch-TensorRT; TensorRT does not track it
};

/// One engine I/O tensor. Names are unique across inputs and outputs.
struct IoBinding {
  std::string name;
  std::string dtype;                ///< free-form; Torch-TensorRT writes ""
  std::vector<std::int64_t> shape;  ///< -1 marks a dynamic dimension; Torch-TensorRT writes []
  bool is_input = false;            ///< (a reader defaults an absent "is_input" to true, as the writer does)
};

/// An output bound in place to the memory of an input.
struct AliasedIo {
  std::string output;  ///< names an output binding
  std::string input;   ///< names an input binding
  AliasKind kind = AliasKind::kKvCacheUpdate;
};

/// Everything the metadata JSON carries.
struct Metadata {
  std::vector<IoBinding> io_bindings;  ///< in the writer's order: Torch-TensorRT lists inputs first
  std::vector<AliasedIo> aliased_io;   ///< at most one entry per output
  bool hardware_compatible = false;
  std::int64_t device_id = 0;  ///< a CUDA device ordinal, 0..INT32_MAX
  std::string serialized_metadata;
  std::string target_platform;
};

}  // namespace torch_tensorrt::executorch_backend::blob
