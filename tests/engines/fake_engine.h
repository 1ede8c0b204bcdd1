// A host-only engine (no CUDA): records every call so CPU tests of checks, policy and session
// bookkeeping can assert what the delegate did, e.g. that nothing was enqueued after a failed check.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "engines/test_engine.h"

namespace trtet_test {

/// Outputs take the shape of input 0 unless `output_shapes` fixes them. enqueue() touches no memory.
class FakeEngine : public TestEngine {
 public:
  /// One recorded call.
  struct Call {
    enum class Op { kSetInputShape, kInferShapes, kSetTensorAddress, kSetAuxStreams, kEnqueue } op;
    int index = -1;
    Shape shape;
    void* address = nullptr;
    cudaStream_t stream = nullptr;
  };

  FakeEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases = {}, int device = 0);
  /// x, y -> out with x, y in [min_shape, max_shape] (the elementwise engine's bindings).
  static std::unique_ptr<FakeEngine> elementwise(const Shape& min_shape, const Shape& max_shape, int device = 0);

  Status set_input_shape(int index, const Shape& shape) override;
  Result<int> infer_shapes() override;
  Status set_tensor_address(int index, void* address) override;
  int aux_stream_count() const noexcept override { return aux_streams_wanted; }
  Status set_aux_streams(cudaStream_t* streams, int count) override;
  Status enqueue(cudaStream_t stream) override;
  bool enqueue_is_synchronous() const noexcept override { return synchronous; }

  /// A copy of the calls so far, in order.
  std::vector<Call> calls() const;
  /// How many recorded calls have operation `op`.
  std::size_t count(Call::Op op) const;
  void clear_calls();

  // ---- knobs a test sets before calling ----
  std::vector<Shape> output_shapes;  ///< per output (in output order); empty: follow input 0
  int unresolved_outputs = 0;        ///< what infer_shapes() reports as data-dependent
  Status enqueue_status;             ///< what enqueue() returns
  int aux_streams_wanted = 0;
  bool synchronous = false;
  std::vector<cudaStream_t> aux_streams;  ///< the streams last handed over

 private:
  void record(Call call);
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

}  // namespace trtet_test
