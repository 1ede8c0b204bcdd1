#include "engines/aux_stream_engine.h"

#include "cuda/check.h"
#include "cuda/device.h"
#include "engines/kernels.h"

namespace trtet_test {

AuxStreamEngine::AuxStreamEngine(int device, const Shape& min_shape, const Shape& max_shape,
                                 const KernelOptions& options)
    : CudaTestEngine({input_desc("x", min_shape, max_shape), input_desc("y", min_shape, max_shape),
                      output_desc("out", min_shape.rank)},
                     {}, device, options) {}

Result<std::unique_ptr<AuxStreamEngine>> AuxStreamEngine::create(int device, const Shape& min_shape,
                                                                 const Shape& max_shape,
                                                                 const KernelOptions& options) {
  std::unique_ptr<AuxStreamEngine> engine(new AuxStreamEngine(device, min_shape, max_shape, options));
  const std::size_t bytes = static_cast<std::size_t>(max_shape.numel()) * sizeof(float);
  TRTET_RETURN_IF_ERROR(engine->init_resources(bytes, kAuxStreams));
  ex::cuda::DeviceGuard guard(device);
  TRTET_RETURN_IF_ERROR(guard.status());
  TRTET_ASSIGN_OR_RETURN(engine->fork_, ex::cuda::Event::create());
  for (ex::cuda::Event& join : engine->join_) {
    TRTET_ASSIGN_OR_RETURN(join, ex::cuda::Event::create());
  }
  return engine;
}

Status AuxStreamEngine::set_aux_streams(cudaStream_t* streams, int count) {
  ++set_aux_calls_;
  TRTET_CHECK_OR_RETURN(count == kAuxStreams && streams != nullptr, kInvalidArgument,
                        "set_aux_streams: this engine takes %d auxiliary streams, got %d", kAuxStreams, count);
  for (int i = 0; i < count; ++i) {
    TRTET_CHECK_OR_RETURN(streams[i] != nullptr, kInvalidArgument, "set_aux_streams: stream %d is null", i);
  }
  aux_.assign(streams, streams + count);
  return Status::Ok();
}

Result<int> AuxStreamEngine::infer_shapes() {
  TRTET_CHECK_OR_RETURN(shape_set_[0] && shape_set_[1], kInvalidState, "infer_shapes before the input shapes");
  TRTET_CHECK_OR_RETURN(shapes_[0] == shapes_[1], kInvalidArgument, "x %s and y %s differ in shape",
                        shapes_[0].to_string().c_str(), shapes_[1].to_string().c_str());
  set_output_shape(2, shapes_[0]);
  return 0;
}

Status AuxStreamEngine::enqueue(cudaStream_t stream) {
  count_enqueue(stream);
  TRTET_RETURN_IF_ERROR(check_bound());
  TRTET_CHECK_OR_RETURN(aux_.size() == static_cast<std::size_t>(kAuxStreams), kInvalidState,
                        "enqueue: no auxiliary streams were set (set_aux_streams)");
  const auto* x = static_cast<const float*>(addresses_[0]);
  const auto* y = static_cast<const float*>(addresses_[1]);
  auto* out = static_cast<float*>(addresses_[2]);
  const std::int64_t n = shapes_[0].numel();

  TRTET_RETURN_IF_ERROR(fork_.record(stream));
  for (cudaStream_t aux : aux_) TRTET_CUDA_CHECK(cudaStreamWaitEvent(aux, fork_.get(), 0));
  for (int k = 0; k < options_.kernels; ++k) {
    TRTET_RETURN_IF_ERROR(launch_scale(x, scratch(0), n, options_.a, spin_ns(), sm_flags(), aux_[0]));
    TRTET_RETURN_IF_ERROR(launch_scale(y, scratch(1), n, options_.b, spin_ns(), sm_flags(), aux_[1]));
  }
  for (int i = 0; i < kAuxStreams; ++i) {
    TRTET_RETURN_IF_ERROR(mark_sms(aux_[static_cast<std::size_t>(i)]));
    TRTET_RETURN_IF_ERROR(join_[i].record(aux_[static_cast<std::size_t>(i)]));
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(stream, join_[i].get(), 0));
  }
  TRTET_RETURN_IF_ERROR(launch_add(scratch(0), scratch(1), out, n, 0, sm_flags(), stream));
  return mark_sms(stream);
}

}  // namespace trtet_test
