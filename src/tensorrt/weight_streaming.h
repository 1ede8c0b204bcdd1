// Weight streaming: what budget to give TensorRT for a requested one, decided without TensorRT.
//
// Note [Weight streaming]
// An engine built with BuilderFlag::kWEIGHT_STREAMING reports getStreamableWeightsSize() > 0; a
// budget (setWeightStreamingBudgetV2) below that size keeps only part of the weights on the GPU and
// streams the rest in during enqueueV3, which then becomes synchronous and cannot be captured into
// a CUDA graph. A budget at or above the size disables streaming. The budget cannot change while an
// execution context exists, so it is set once, before the context is created. The budget comes from
// the load-time backend option, else the compile spec (EngineRequest::weight_streaming_budget).
#pragma once

#include <cstdint>
#include <optional>

namespace torch_tensorrt::executorch_backend::tensorrt {

/// What to do with a requested budget.
struct WeightStreamingPlan {
  /// The value for setWeightStreamingBudgetV2; nullopt: leave TensorRT's default (streaming off).
  std::optional<std::int64_t> budget;
  /// True when the request is ignored because the engine has no streamable weights (worth a warning).
  bool ignored = false;
  /// True when the budget leaves weights to stream: enqueue is synchronous.
  bool streams = false;
};

/// The plan for an engine with `streamable_bytes` of streamable weights (getStreamableWeightsSize)
/// and the `requested` budget. A request at or above the streamable size is clamped to it (streaming
/// off, and within int64 for TensorRT); a request for an engine without streamable weights is ignored.
WeightStreamingPlan plan_weight_streaming(std::int64_t streamable_bytes, std::optional<std::uint64_t> requested) noexcept;

/// True when an engine with `streamable_bytes` streams under `budget` (getWeightStreamingBudgetV2).
bool streams_weights(std::int64_t streamable_bytes, std::int64_t budget) noexcept;

}  // namespace torch_tensorrt::executorch_backend::tensorrt
