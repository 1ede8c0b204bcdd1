// The weight-streaming budget: a GPU byte budget for an engine's streamable weights, given as a
// compile spec baked into the program or as a load-time backend option (which takes precedence).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::blob {

/// The key of the compile spec and of the load-time backend option.
inline constexpr std::string_view kWeightStreamingBudgetKey = "weight_streaming_budget";

/// Where a budget value came from; it decides the error code and names the source in messages.
enum class BudgetSource {
  kCompileSpec,  ///< baked into the program: a bad value is kInvalidProgram
  kLoadOption,   ///< given by the caller at load time: a bad value is kInvalidArgument
};

/// Parses a budget from `text`, exactly its bytes (a compile-spec value is not NUL-terminated):
/// one or more ASCII decimal digits, nothing else (no sign, space, or NUL), at most INT64_MAX
/// (TensorRT's budget is an int64). An empty, negative, non-numeric, overflowing or
/// trailing-garbage value is an error naming the value and the source.
Result<uint64_t> parse_weight_streaming_budget(std::string_view text,
                                               BudgetSource source = BudgetSource::kCompileSpec);

/// Checks a load-time option given as an integer: non-negative, else kInvalidArgument.
Result<uint64_t> parse_weight_streaming_budget(int64_t value);

}  // namespace torch_tensorrt::executorch_backend::blob
