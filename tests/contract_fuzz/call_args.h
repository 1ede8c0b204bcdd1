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
#include "session/tensor_view.h"

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

/// A session's shared in-place state (a KV cache): one buffer that every call with
/// CallPlan::shared_cache updates in place, and the CPU model of what it holds. Its values, and
/// the inputs added to it, are multiples of 1/4 of at most 4 (draw_dyadic), so every update is
/// exact in float: cache += x lands the same in whatever order concurrent calls run, and
/// cache = x - cache shows the order the calls ran in.
struct SharedCache {
  std::unique_ptr<Buffer> buffer;
  std::vector<float> expected;  ///< what the cache holds once every successful call so far has run
  std::uint64_t updates = 0;    ///< successful calls that updated it
  bool negate = false;          ///< the update is cache = x - cache (EngineModel::negates_cache), else cache += x

  /// A cache of `shape` in `mem` (device or managed) holding values drawn from `seed`.
  static ex::Result<std::unique_ptr<SharedCache>> make(const InputShape& shape, Mem mem, std::uint64_t seed,
                                                       cudaStream_t io);
  /// A successful call updated it with `x`.
  void apply(const std::vector<float>& x);
};

class CallArgs {
 public:
  /// Lends buffers from `pool`, draws the inputs from plan.data_seed and writes them, poisons
  /// every output buffer (its whole capacity) and builds the views. `io`: the thread's I/O stream.
  /// With plan.shared_cache, the input updated in place is `cache` (its values as they are now);
  /// with plan.caller_spin_us, the inputs that a stream can write hold other values until
  /// queue_caller_work() queues their writes.
  static ex::Result<std::unique_ptr<CallArgs>> prepare(const EngineModel& model, const CallPlan& plan,
                                                       BufferPool& pool, cudaStream_t io,
                                                       const SharedCache* cache = nullptr);

  /// Caller work (CallPlan::caller_spin_us) on `stream`: a spin, then the writes of the inputs'
  /// values (from device copies), so a call not ordered after `stream` reads other values.
  ex::Status queue_caller_work(cudaStream_t stream);
  /// For the next call of a repeat: new input values from `data_seed` (the shared cache's as the
  /// model has it now), queued on `stream` after a spin like queue_caller_work (pageable inputs
  /// written at once: the previous call had read them when it returned). Outputs are not poisoned
  /// again: the previous call may still be writing them.
  ex::Status requeue(std::uint64_t data_seed, cudaStream_t stream, cudaStream_t io);
  /// Whether every non-null tensor is device-accessible (device or managed): the call returns at once.
  bool device_only() const;
  /// Whether input `binding` is the session's shared cache.
  bool is_shared_cache(int binding) const { return plan_.shared_cache && binding == model_->cache_binding(); }
  /// Every buffer the call uses (for the pool, while the call is in flight).
  std::vector<const Buffer*> buffers() const;

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
  /// Writes the inputs' values; with `queue`, those queue_caller_work() writes get device copies of
  /// theirs instead (and, with `stale`, other values until then).
  ex::Status write_inputs(cudaStream_t io, bool queue, bool stale);
  /// New input values from `data_seed`, written into the input buffers (as write_inputs).
  ex::Status write_new_inputs(std::uint64_t data_seed, cudaStream_t io, bool queue = false, bool stale = false);
  /// Whether caller work writes input `binding` (a stream can: not pageable; not the shared cache).
  bool queued(int binding) const;
  ex::Status poison_outputs(cudaStream_t io);

  const EngineModel* model_;
  CallPlan plan_;
  BufferPool* pool_ = nullptr;
  const SharedCache* cache_ = nullptr;
  std::vector<Buffer*> sources_;  ///< per binding: the device copy caller work writes from (or null)
  std::vector<std::unique_ptr<TensorState>> tensors_;
  std::vector<ex::delegate::TensorView> views_;
  std::vector<std::size_t> bytes_;
  std::vector<std::vector<float>> inputs_;
  std::vector<ex::Shape> initial_shapes_;
};

/// `n` floats in [-4, -0.25] U [0.25, 4] from `seed` (a counter hash: fast for 16 M elements).
std::vector<float> draw_floats(std::size_t n, std::uint64_t seed);
/// `n` multiples of 1/4 in [-4, -0.25] U [0.25, 4] from `seed`: sums of a few thousand are exact in float.
std::vector<float> draw_dyadic(std::size_t n, std::uint64_t seed);

}  // namespace trtet_test::fuzz
