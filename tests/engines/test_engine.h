// The bookkeeping every test engine shares: bindings, profile checks, bound shapes and addresses,
// and counters a test reads to prove what the delegate did (or did not) call.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace trtet_test {

namespace ex = torch_tensorrt::executorch_backend;
using ex::DataType;
using ex::ErrorCode;
using ex::Result;
using ex::Shape;
using ex::Status;

/// Host-side half of every test engine (no CUDA here). Subclasses implement infer_shapes() and
/// enqueue(); enqueue implementations call count_enqueue() first.
class TestEngine : public ex::engine::Engine {
 public:
  TestEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases, int device);

  int io_count() const noexcept override { return static_cast<int>(io_.size()); }
  const ex::engine::IoDesc& io(int index) const noexcept override { return io_[static_cast<std::size_t>(index)]; }
  const std::vector<ex::engine::Alias>& aliases() const noexcept override { return aliases_; }
  int device() const noexcept override { return device_; }

  /// kInvalidArgument for a non-input index, a rank or a dimension outside the selected profile (as TensorRT).
  Status set_input_shape(int index, const Shape& shape) override;

  // ---- optimization profiles: profile 0 is the bindings' min/max; add_profile adds more ----
  /// Adds a profile in which every input has bounds [min_shape, max_shape] (call before use).
  void add_profile(const Shape& min_shape, const Shape& max_shape);
  int profile_count() const noexcept override { return 1 + static_cast<int>(extra_profiles_.size()); }
  ex::engine::ShapeBounds input_bounds(int profile, int index) const override;
  /// Selects `profile` (kInvalidArgument when out of range) and counts the switch.
  Status select_profile(int profile, cudaStream_t stream) override;
  /// The selected profile, and how many times select_profile() was called.
  int selected_profile() const noexcept { return profile_.load(); }
  std::uint64_t select_profile_count() const noexcept { return selects_.load(); }
  /// kInvalidArgument for a non-output index; kInvalidState before infer_shapes().
  Result<Shape> output_shape(int index) const override;
  /// kInvalidArgument for a bad index, a null address or one not 256-byte aligned (TensorRT's rule).
  Status set_tensor_address(int index, void* address) override;

  // ---- what tests read (thread-safe counters) ----
  std::uint64_t enqueue_count() const noexcept { return enqueues_.load(); }
  std::uint64_t set_input_shape_count() const noexcept { return set_input_shapes_.load(); }
  std::uint64_t set_tensor_address_count() const noexcept { return set_tensor_addresses_.load(); }
  /// The shape last set (inputs) or inferred (outputs) for binding `index`.
  const Shape& bound_shape(int index) const { return shapes_[static_cast<std::size_t>(index)]; }
  /// The address last bound to binding `index` (nullptr before any).
  void* bound_address(int index) const { return addresses_[static_cast<std::size_t>(index)]; }
  /// The stream of the last enqueue.
  cudaStream_t last_stream() const noexcept { return last_stream_.load(); }

 protected:
  /// Counts an enqueue on `stream`; call first in enqueue().
  void count_enqueue(cudaStream_t stream) noexcept {
    last_stream_.store(stream);
    enqueues_.fetch_add(1);
  }
  /// kInvalidState unless every binding has an address and every input a shape.
  Status check_bound() const;
  /// Marks output shapes as inferred.
  void set_output_shape(int index, const Shape& shape);

  std::vector<ex::engine::IoDesc> io_;
  std::vector<ex::engine::Alias> aliases_;
  int device_ = 0;
  std::vector<Shape> shapes_;
  std::vector<bool> shape_set_;
  std::vector<void*> addresses_;

 private:
  std::atomic<std::uint64_t> enqueues_{0};
  std::atomic<std::uint64_t> set_input_shapes_{0};
  std::atomic<std::uint64_t> set_tensor_addresses_{0};
  std::atomic<cudaStream_t> last_stream_{nullptr};
  std::vector<ex::engine::ShapeBounds> extra_profiles_;  ///< profiles 1..: bounds of every input
  std::atomic<int> profile_{0};
  std::atomic<std::uint64_t> selects_{0};
};

/// An input binding of float32 with profile [min_shape, max_shape].
ex::engine::IoDesc input_desc(const char* name, const Shape& min_shape, const Shape& max_shape,
                              DataType dtype = DataType::kFloat32);
/// An output binding of float32 (dims -1 where they follow the inputs).
ex::engine::IoDesc output_desc(const char* name, int rank, DataType dtype = DataType::kFloat32);

}  // namespace trtet_test
