#include "engines/aliasing_engine.h"

#include "engines/kernels.h"

namespace trtet_test {

AliasingEngine::AliasingEngine(int device, const Shape& min_shape, const Shape& max_shape, ex::engine::AliasKind kind,
                               const KernelOptions& options)
    : CudaTestEngine({input_desc("cache", min_shape, max_shape), input_desc("x", min_shape, max_shape),
                      output_desc("cache_out", min_shape.rank)},
                     {ex::engine::Alias{2, 0, kind}}, device, options) {}

Result<std::unique_ptr<AliasingEngine>> AliasingEngine::create(int device, const Shape& min_shape,
                                                               const Shape& max_shape, ex::engine::AliasKind kind,
                                                               const KernelOptions& options) {
  std::unique_ptr<AliasingEngine> engine(new AliasingEngine(device, min_shape, max_shape, kind, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

Result<int> AliasingEngine::infer_shapes() {
  TRTET_CHECK_OR_RETURN(shape_set_[0] && shape_set_[1], kInvalidState, "infer_shapes before the input shapes");
  TRTET_CHECK_OR_RETURN(shapes_[0] == shapes_[1], kInvalidArgument, "cache %s and x %s differ in shape",
                        shapes_[0].to_string().c_str(), shapes_[1].to_string().c_str());
  set_output_shape(2, shapes_[0]);
  return 0;
}

Status AliasingEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(check_bound());
  const auto* cache = static_cast<const float*>(addresses_[0]);
  const auto* x = static_cast<const float*>(addresses_[1]);
  auto* out = static_cast<float*>(addresses_[2]);
  const std::int64_t n = shapes_[0].numel();
  // The spin comes first, so a late read of the cache is observable by a test of ordering; the
  // update runs once (repeating it would add x again).
  for (int k = 0; k < options_.kernels && options_.spin_us > 0; ++k) {
    TRTET_RETURN_IF_ERROR(launch_spin(spin_ns(), 1, stream));
  }
  TRTET_RETURN_IF_ERROR(launch_add(cache, x, out, n, 0, sm_flags(), stream));
  return mark_sms(stream);
}

}  // namespace trtet_test
