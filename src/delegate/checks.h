// Argument checks made before any work is enqueued (pure: no CUDA calls).
#pragma once

#include <cstddef>

#include "common/status.h"
#include "delegate/tensor_view.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Checks that `count` arguments match the engine's bindings: the count, every dtype, and every
/// input's rank, dimensions (within the profile's min..max) and byte capacity.
/// kInvalidArgument naming the binding and what differs.
Status check_arguments(const engine::Engine& engine, const TensorView* args, std::size_t count);

/// Checks one input against its binding; exposed for tests.
Status check_input(const engine::IoDesc& io, const TensorView& arg, int index);

/// Byte count of `shape` elements of `dtype`; SIZE_MAX when it does not fit in size_t.
std::size_t byte_size(const Shape& shape, DataType dtype) noexcept;

/// Byte count of binding `index` (`what`: "input" or "output", `name` its name); kInvalidArgument when the
/// element count or byte count overflows.
Result<std::size_t> checked_byte_size(const Shape& shape, DataType dtype, const char* what, int index,
                                      const std::string& name);

}  // namespace torch_tensorrt::executorch_backend::delegate
