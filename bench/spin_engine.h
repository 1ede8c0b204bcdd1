// A benchmark engine: out = a * x over a float32 vector, by a grid whose every block then spins
// for a set time. Its footprint (blocks, threads, shared memory) and duration are chosen per
// scenario: a latency-critical victim, an SM-flooding aggressor, a 20 us pipelining engine, and
// with no spin over a vector of hundreds of MiB a memory-bound grid-stride scale (the
// neighbour of isolation_memory_bound).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"

namespace trtet_bench {

namespace ex = torch_tensorrt::executorch_backend;

struct SpinOptions {
  int blocks = 132;                  ///< grid size
  int threads = 128;                 ///< block size
  int shared_bytes = 0;              ///< dynamic shared memory per block (occupancy control)
  std::int64_t spin_ns = 0;          ///< every block lasts at least this long (%globaltimer)
  int kernels = 1;                   ///< launches per enqueue
  std::int64_t max_elements = 1 << 26;  ///< profile maximum of the input
};

/// Bindings: 0 "x" (input, [1..max_elements]), 1 "out" (output, x's shape).
class SpinEngine final : public ex::engine::Engine {
 public:
  static ex::Result<std::unique_ptr<SpinEngine>> create(int device, const SpinOptions& options);

  int io_count() const noexcept override { return 2; }
  const ex::engine::IoDesc& io(int index) const noexcept override { return io_[static_cast<std::size_t>(index)]; }
  const std::vector<ex::engine::Alias>& aliases() const noexcept override { return aliases_; }
  int device() const noexcept override { return device_; }
  ex::Status set_input_shape(int index, const ex::Shape& shape) override;
  ex::Result<int> infer_shapes() override { return 0; }
  ex::Result<ex::Shape> output_shape(int index) const override;
  ex::Status set_tensor_address(int index, void* address) override;
  ex::Status enqueue(cudaStream_t stream) override;

  const SpinOptions& options() const noexcept { return options_; }

 private:
  SpinEngine(int device, const SpinOptions& options);

  int device_;
  SpinOptions options_;
  std::vector<ex::engine::IoDesc> io_;
  std::vector<ex::engine::Alias> aliases_;
  ex::Shape shape_;
  const float* x_ = nullptr;
  float* out_ = nullptr;
};

/// Launches the engine's kernel directly (no delegate): the reference for "the engine's own enqueue".
ex::Status launch_spin_scale(const float* x, float* out, std::int64_t n, const SpinOptions& options,
                             cudaStream_t stream);

}  // namespace trtet_bench
