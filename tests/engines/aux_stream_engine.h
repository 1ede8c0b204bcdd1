// out = a*x + b*y computed on two auxiliary streams (a*x on one, b*y on the other) and joined
// back onto the main stream by events, as TensorRT does with setAuxStreams.
#pragma once

#include <memory>
#include <vector>

#include "cuda/event.h"
#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// Bindings as ElementwiseEngine. aux_stream_count() is 2; enqueue fails (kInvalidState) until
/// set_aux_streams() handed two streams. Scratch for the partial results is made at construction
/// for max_shape. Every kernel (main and aux) records SMs when record_sms is set, and the marker
/// runs on every stream.
class AuxStreamEngine : public CudaTestEngine {
 public:
  static constexpr int kAuxStreams = 2;

  static Result<std::unique_ptr<AuxStreamEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                         const KernelOptions& options = {});

  int aux_stream_count() const noexcept override { return kAuxStreams; }
  /// kInvalidArgument unless `count` is 2 and both streams are non-null.
  Status set_aux_streams(cudaStream_t* streams, int count) override;
  Result<int> infer_shapes() override;
  /// fork (event on main, waited by each aux) -> a*x on aux 0, b*y on aux 1 -> join (events on
  /// the aux streams, waited by main) -> out = sum on main.
  Status enqueue(cudaStream_t stream) override;

  /// The streams handed by the delegate (empty before set_aux_streams), and how often it happened.
  const std::vector<cudaStream_t>& aux_streams() const noexcept { return aux_; }
  int set_aux_streams_count() const noexcept { return set_aux_calls_; }

 private:
  AuxStreamEngine(int device, const Shape& min_shape, const Shape& max_shape, const KernelOptions& options);

  std::vector<cudaStream_t> aux_;
  int set_aux_calls_ = 0;
  ex::cuda::Event fork_;
  ex::cuda::Event join_[kAuxStreams];
};

}  // namespace trtet_test
