// Aliased outputs: an output the engine writes in place into an input's memory (a KV-cache update,
// or a user alias declared by Torch-TensorRT).
//
// Note [aliased outputs]
// The delegate binds an aliased output to its input's memory, so the engine writes the output's
// bytes there. The aliases come from the program (the blob's aliased_io, or the engine itself), so
// nothing about them is trusted: an output larger than its input would have the engine write past
// the input's buffer. They are checked once, when the session is initialized
// (validate_aliases()): each names an output and an input, an input takes at most one output, both
// have the same dtype, and the output's size with every input at optimization profile 0's maximum
// is no larger than the input's at that maximum. Other profiles, and shapes below the maximum, are
// checked on every call (check_alias_fits()): an aliased output is bound only if its bytes fit the
// input's capacity; otherwise the call fails with kInvalidArgument and nothing is enqueued.
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Checks `engine.aliases()` (Note [aliased outputs]) and returns, for every binding, the input its
/// output aliases (-1: none; inputs -1). kInvalidProgram naming the rule broken. Where aliases
/// exist, sets every input to profile 0's maximum and infers the output shapes (host-only engine
/// calls; every call sets its own shapes again); an output whose shape stays unknown there is
/// checked on each call only.
Result<std::vector<int>> validate_aliases(engine::Engine& engine);

/// Ok when output `output` (`output_bytes` at this call's shape) fits the `input_capacity` bytes of
/// input `input`, which it is written into; kInvalidArgument naming both otherwise.
Status check_alias_fits(const engine::Engine& engine, int output, int input, std::size_t output_bytes,
                        std::size_t input_capacity);

}  // namespace torch_tensorrt::executorch_backend::delegate
