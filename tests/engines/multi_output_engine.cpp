#include "engines/multi_output_engine.h"

#include <string>
#include <vector>

#include "engines/kernels.h"

namespace trtet_test {
namespace {

std::vector<ex::engine::IoDesc> bindings(const Shape& min_shape, const Shape& max_shape, int outputs) {
  std::vector<ex::engine::IoDesc> io{input_desc("x", min_shape, max_shape)};
  for (int k = 0; k < outputs; ++k) {
    const std::string name = "out" + std::to_string(k);
    io.push_back(output_desc(name.c_str(), min_shape.rank));
  }
  return io;
}

}  // namespace

MultiOutputEngine::MultiOutputEngine(int device, const Shape& min_shape, const Shape& max_shape, int outputs,
                                     const KernelOptions& options)
    : CudaTestEngine(bindings(min_shape, max_shape, outputs), {}, device, options) {}

Result<std::unique_ptr<MultiOutputEngine>> MultiOutputEngine::create(int device, const Shape& min_shape,
                                                                     const Shape& max_shape, int outputs,
                                                                     const KernelOptions& options) {
  TRTET_CHECK_OR_RETURN(outputs >= 1, kInvalidArgument, "a multi-output engine needs at least one output, not %d",
                        outputs);
  std::unique_ptr<MultiOutputEngine> engine(new MultiOutputEngine(device, min_shape, max_shape, outputs, options));
  TRTET_RETURN_IF_ERROR(engine->init_resources());
  return engine;
}

Result<int> MultiOutputEngine::infer_shapes() {
  TRTET_CHECK_OR_RETURN(shape_set_[0], kInvalidState, "infer_shapes before the input shape");
  for (int o = 1; o < io_count(); ++o) set_output_shape(o, shapes_[0]);
  return 0;
}

Status MultiOutputEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(check_bound());
  const auto* x = static_cast<const float*>(addresses_[0]);
  const std::int64_t n = shapes_[0].numel();
  for (int o = 1; o < io_count(); ++o) {
    const std::int64_t spin = o + 1 == io_count() ? spin_ns() : 0;
    TRTET_RETURN_IF_ERROR(launch_scale(x, static_cast<float*>(addresses_[static_cast<std::size_t>(o)]), n,
                                       static_cast<float>(o), spin, sm_flags(), stream));
  }
  return mark_sms(stream);
}

}  // namespace trtet_test
