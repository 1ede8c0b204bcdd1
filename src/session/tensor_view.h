// Runtime-agnostic view of one delegate argument.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "engine/types.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Where an argument's memory lives, when the runtime knows (ExecuTorch's tensor device info);
/// kUnknown lets the delegate classify the pointer itself.
enum class MemoryHint { kUnknown, kHost, kDevice };

/// One argument of execute(): a tensor the runtime owns. Inputs are read; outputs are resized
/// (through `resize`) to the engine's output shape and written.
struct TensorView {
  void* data = nullptr;
  /// Bytes available at `data` (the tensor's capacity; outputs may be resized within it).
  std::size_t capacity_bytes = 0;
  Shape shape;
  DataType dtype = DataType::kFloat32;
  MemoryHint hint = MemoryHint::kUnknown;

  /// Outputs: resizes the runtime's tensor to `shape` (may move `data`; the delegate reads the
  /// view again afterwards). Null when the runtime cannot resize: shapes must then already match.
  Status (*resize)(void* context, TensorView& view, const Shape& shape) = nullptr;
  /// Aliased outputs: points the runtime's tensor at `data` (the aliased input's memory).
  /// Null when the runtime cannot re-point its tensor.
  Status (*set_data)(void* context, TensorView& view, void* data) = nullptr;
  void* context = nullptr;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
