#include "tensorrt/weight_streaming.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

WeightStreamingPlan plan_weight_streaming(std::int64_t streamable_bytes, std::optional<std::uint64_t> requested) noexcept {
  WeightStreamingPlan plan;
  if (!requested.has_value()) return plan;
  if (streamable_bytes <= 0) {
    plan.ignored = true;
    return plan;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(streamable_bytes);
  plan.budget = static_cast<std::int64_t>(*requested < size ? *requested : size);
  plan.streams = streams_weights(streamable_bytes, *plan.budget);
  return plan;
}

bool streams_weights(std::int64_t streamable_bytes, std::int64_t budget) noexcept {
  return streamable_bytes > 0 && budget >= 0 && budget < streamable_bytes;
}

}  // namespace torch_tensorrt::executorch_backend::tensorrt
