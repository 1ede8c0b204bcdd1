// Argument checks made before any work is enqueued (pure: no CUDA calls).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "session/tensor_view.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Checks that `count` arguments match the engine's bindings: the count, every dtype, and every
/// input's rank, dimensions (within the bounds of the optimization profile that fits them: see
/// choose_profile) and byte capacity. Returns that profile.
/// kInvalidArgument naming the binding and what differs.
Result<int> check_arguments(const engine::Engine& engine, const TensorView* args, std::size_t count);

/// Checks one input against its binding, with profile 0's bounds; exposed for tests.
Status check_input(const engine::IoDesc& io, const TensorView& arg, int index);
/// The same with `bounds` (profile 0's or another's), named `profile` in messages ("profile 1 ").
Status check_input(const engine::IoDesc& io, const engine::ShapeBounds& bounds, const char* profile,
                   const TensorView& arg, int index);

/// The optimization profile whose bounds hold every input's shape, preferring the tightest (the
/// smallest sum of its inputs' maximum element counts; the lower index on a tie). Inputs'
/// ranks are checked first. kInvalidArgument naming every profile's bounds when none fits.
Result<int> choose_profile(const engine::Engine& engine, const TensorView* args);

/// Checks what a session needs of an engine's metadata before any call: some binding, some
/// optimization profile, every input's bounds in every profile of profile 0's rank with minimum <=
/// maximum. kInvalidProgram naming the binding and profile.
Status check_engine_metadata(const engine::Engine& engine);

/// Byte count of binding `index` (`what`: "input" or "output", `name` its name); kInvalidArgument when the
/// element count or byte count overflows.
Result<std::size_t> checked_byte_size(const Shape& shape, DataType dtype, const char* what, int index,
                                      const std::string& name);

}  // namespace torch_tensorrt::executorch_backend::delegate
