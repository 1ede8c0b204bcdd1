#include "engines/sum_engine.h"

#include "engines/kernels.h"

namespace trtet_test {

SumEngine::SumEngine(int device, const Shape& min_shape, const Shape& max_shape, const KernelOptions& options)
    : CudaTestEngine({input_desc("x", min_shape, max_shape), output_desc("total", 1)}, {}, device, options) {}

Result<std::unique_ptr<SumEngine>> SumEngine::create(int device, const Shape& min_shape, const Shape& max_shape,
                                                     const KernelOptions& options) {
  std::unique_ptr<SumEngine> engine(new SumEngine(device, min_shape, max_shape, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

Result<int> SumEngine::infer_shapes() {
  TRTET_CHECK_OR_RETURN(shape_set_[0], kInvalidState, "infer_shapes before the input shape");
  set_output_shape(1, Shape{1});
  return 0;
}

Status SumEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(check_bound());
  TRTET_RETURN_IF_ERROR(launch_sum(static_cast<const float*>(addresses_[0]), static_cast<float*>(addresses_[1]),
                                   shapes_[0].numel(), sm_flags(), stream));
  for (int k = 0; k < options_.kernels && options_.spin_us > 0; ++k) {
    TRTET_RETURN_IF_ERROR(launch_spin(spin_ns(), 1, stream));
  }
  return mark_sms(stream);
}

}  // namespace trtet_test
