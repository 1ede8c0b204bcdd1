#include "tensorrt/weight_streaming.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

const char* to_string(BudgetSource source) noexcept {
  switch (source) {
    case BudgetSource::kNone: return "TensorRT's default, none set";
    case BudgetSource::kRequested: return "requested";
    case BudgetSource::kAutomatic: return "TensorRT's automatic budget";
  }
  return "?";
}

WeightStreamingPlan plan_weight_streaming(std::int64_t streamable_bytes, std::optional<std::uint64_t> requested,
                                          std::optional<std::int64_t> automatic) noexcept {
  WeightStreamingPlan plan;
  if (streamable_bytes <= 0) {
    plan.ignored = requested.has_value();
    return plan;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(streamable_bytes);
  if (requested.has_value()) {
    plan.budget = static_cast<std::int64_t>(*requested < size ? *requested : size);
    plan.source = BudgetSource::kRequested;
  } else if (automatic.has_value() && *automatic >= 0) {
    plan.budget = *automatic < streamable_bytes ? *automatic : streamable_bytes;
    plan.source = BudgetSource::kAutomatic;
  } else {
    return plan;
  }
  plan.streams = streams_weights(streamable_bytes, *plan.budget);
  return plan;
}

bool streams_weights(std::int64_t streamable_bytes, std::int64_t budget) noexcept {
  return streamable_bytes > 0 && budget >= 0 && budget < streamable_bytes;
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
