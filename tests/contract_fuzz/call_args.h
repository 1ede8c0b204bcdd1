// The arguments of one execute(), as a runtime would hand them over: a TensorView per binding
// whose resize and set_data callbacks act on the fuzzer's tensor state, the input values drawn
// for it (the CPU reference's operands) and the buffers behind it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/engine_model.h"
#include "delegate/tensor_view.h"

namespace trtet_test::fuzz {

/// One argument's runtime-side state (what ExecuTorch's tensor would hold).
struct TensorState {
  Buffer* buffer = nullptr;  ///< null: the tensor's data pointer is null (an empty tensor)
  void* data = nullptr;      ///< current data pointer (set_data may re-point it)
  std::size_t capacity = 0;
  ex::Shape shape;
  int resize_calls = 0;
  int set_data_calls = 0;
};

class CallArgs {
 public:
  /// Lends buffers from `pool`, draws the inputs from plan.data_seed and writes them, poisons
  /// every output buffer (its whole capacity) and builds the views. `io`: the thread's I/O stream.
  static ex::Result<std::unique_ptr<CallArgs>> prepare(const EngineModel& model, const CallPlan& plan,
                                                       BufferPool& pool, cudaStream_t io);

  /// New input values from `data_seed` written into the same buffers, outputs poisoned again and
  /// views rebuilt (shapes and pointers as at prepare): for graph replays and repeated calls.
  ex::Status refresh(std::uint64_t data_seed, cudaStream_t io);
  /// New input data and poisoned outputs, keeping what the captured call set up (output shapes,
  /// aliased outputs pointed at their inputs): for graph replays, which do not run the delegate.
  ex::Status refresh_data(std::uint64_t data_seed, cudaStream_t io);
  /// Outputs poisoned again and views rebuilt; inputs kept.
  ex::Status repoison(cudaStream_t io);

  const EngineModel& model() const noexcept { return *model_; }
  const CallPlan& plan() const noexcept { return plan_; }
  ex::delegate::TensorView* views() noexcept { return views_.data(); }
  std::size_t count() const noexcept { return views_.size(); }
  TensorState& tensor(int binding) { return *tensors_[static_cast<std::size_t>(binding)]; }
  const TensorState& tensor(int binding) const { return *tensors_[static_cast<std::size_t>(binding)]; }
  /// Bytes of binding's data for this call (inputs: the input shape; outputs: the engine's output).
  std::size_t bytes(int binding) const { return bytes_[static_cast<std::size_t>(binding)]; }
  /// Input values by binding (empty for outputs).
  const std::vector<std::vector<float>>& inputs() const noexcept { return inputs_; }
  /// The view shape an output starts with (before the delegate resizes it).
  const ex::Shape& initial_shape(int binding) const { return initial_shapes_[static_cast<std::size_t>(binding)]; }

  /// Whether this binding's memory is the host's (pinned or pageable) and non-null.
  bool host_binding(int binding) const;
  /// True if any non-null input (outputs) lives in host memory; aliased outputs excluded.
  bool host_inputs() const;
  bool host_outputs() const;

  /// Replaces binding's buffer (for a probe with one binding in pageable memory); views rebuilt.
  ex::Status swap_buffer(int binding, Buffer* buffer, cudaStream_t io);

 private:
  CallArgs(const EngineModel& model, const CallPlan& plan) : model_(&model), plan_(plan) {}
  void build_views();
  ex::Status write_inputs(cudaStream_t io);
  /// New input values from `data_seed`, written into the input buffers.
  ex::Status write_new_inputs(std::uint64_t data_seed, cudaStream_t io);
  ex::Status poison_outputs(cudaStream_t io);

  const EngineModel* model_;
  CallPlan plan_;
  std::vector<std::unique_ptr<TensorState>> tensors_;
  std::vector<ex::delegate::TensorView> views_;
  std::vector<std::size_t> bytes_;
  std::vector<std::vector<float>> inputs_;
  std::vector<ex::Shape> initial_shapes_;
};

/// `n` floats in [-4, -0.25] U [0.25, 4] from `seed` (a counter hash: fast for 16 M elements).
std::vector<float> draw_floats(std::size_t n, std::uint64_t seed);

}  // namespace trtet_test::fuzz
