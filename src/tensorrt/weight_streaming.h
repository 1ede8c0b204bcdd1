// Weight streaming: what budget to give TensorRT, decided without TensorRT.
//
// Note [Weight streaming]
// An engine built with BuilderFlag::kWEIGHT_STREAMING reports getStreamableWeightsSize() > 0; a
// budget (setWeightStreamingBudgetV2) below that size keeps only part of the weights on the GPU and
// streams the rest in during enqueueV3, which then becomes synchronous and cannot be captured into
// a CUDA graph. A budget at or above the size disables streaming. The budget cannot change while an
// execution context exists, so it is set once, before the context is created. The budget comes from
// the load-time backend option, else the compile spec (EngineRequest::weight_streaming_budget), else,
// for an engine built for streaming, TensorRT's automatic budget (getWeightStreamingAutomaticBudget).
// An engine without streamable weights is never asked about budgets (TensorRT's weight-streaming
// calls are for streaming engines only); a budget requested for one is ignored with a warning.
#pragma once

#include <cstdint>
#include <optional>

namespace torch_tensorrt::executorch_backend::tensorrt {

/// Where a weight-streaming budget came from.
enum class BudgetSource {
  kNone,       ///< no budget is set (no streamable weights, or no usable automatic budget)
  kRequested,  ///< the load-time option or the compile spec
  kAutomatic,  ///< TensorRT's getWeightStreamingAutomaticBudget
};

/// "TensorRT's default, none set", "requested" or "TensorRT's automatic budget", for messages.
const char* to_string(BudgetSource source) noexcept;

/// What to do for one engine.
struct WeightStreamingPlan {
  /// The value for setWeightStreamingBudgetV2; nullopt: do not call it.
  std::optional<std::int64_t> budget;
  BudgetSource source = BudgetSource::kNone;
  /// True when a requested budget is ignored because the engine has no streamable weights (worth a warning).
  bool ignored = false;
  /// True when the budget leaves weights to stream: enqueue is synchronous.
  bool streams = false;
};

/// The plan for an engine with `streamable_bytes` of streamable weights (getStreamableWeightsSize),
/// the `requested` budget, and TensorRT's `automatic` budget (asked only when the engine streams and
/// nothing was requested; nullopt otherwise). A budget at or above the streamable size is clamped to it
/// (streaming off, and within int64 for TensorRT); a request for an engine without streamable weights
/// is ignored; a negative automatic budget sets none.
WeightStreamingPlan plan_weight_streaming(std::int64_t streamable_bytes, std::optional<std::uint64_t> requested,
                                          std::optional<std::int64_t> automatic = std::nullopt) noexcept;

/// True when an engine with `streamable_bytes` streams under `budget` (getWeightStreamingBudgetV2).
bool streams_weights(std::int64_t streamable_bytes, std::int64_t budget) noexcept;

}  // namespace torch_tensorrt::executorch_backend::tensorrt
