#include "engines/elementwise_engine.h"

#include "engines/fault_hook.h"
#include "engines/kernels.h"

namespace trtet_test {

ElementwiseEngine::ElementwiseEngine(int device, const Shape& min_shape, const Shape& max_shape,
                                     const KernelOptions& options)
    : CudaTestEngine({input_desc("x", min_shape, max_shape), input_desc("y", min_shape, max_shape),
                      output_desc("out", min_shape.rank)},
                     {}, device, options) {}

Result<std::unique_ptr<ElementwiseEngine>> ElementwiseEngine::create(int device, const Shape& min_shape,
                                                                     const Shape& max_shape,
                                                                     const KernelOptions& options) {
  std::unique_ptr<ElementwiseEngine> engine(new ElementwiseEngine(device, min_shape, max_shape, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

Result<int> ElementwiseEngine::infer_shapes() {
  TRTET_CHECK_OR_RETURN(shape_set_[0] && shape_set_[1], kInvalidState, "infer_shapes before the input shapes");
  TRTET_CHECK_OR_RETURN(shapes_[0] == shapes_[1], kInvalidArgument, "x %s and y %s differ in shape",
                        shapes_[0].to_string().c_str(), shapes_[1].to_string().c_str());
  set_output_shape(2, shapes_[0]);
  return 0;
}

Status ElementwiseEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(engine_fault("test engine enqueue"));
  TRTET_RETURN_IF_ERROR(check_bound());
  const auto* x = static_cast<const float*>(addresses_[0]);
  const auto* y = static_cast<const float*>(addresses_[1]);
  auto* out = static_cast<float*>(addresses_[2]);
  const std::int64_t n = shapes_[0].numel();
  for (int k = 0; k < options_.kernels; ++k) TRTET_RETURN_IF_ERROR(launch(x, y, out, n, stream));
  if (options_.fault && n > 0) TRTET_RETURN_IF_ERROR(launch_fault_if(x, options_.fault_if, stream));
  return mark_sms(stream);
}

Status ElementwiseEngine::launch(const float* x, const float* y, float* out, std::int64_t n, cudaStream_t stream) {
  return launch_axpby(x, y, out, n, options_.a, options_.b, spin_ns(), sm_flags(), stream);
}

}  // namespace trtet_test
