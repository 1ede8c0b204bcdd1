// An engine whose aliases and output shapes a test chooses freely (aliased outputs): host-only
// up to enqueue, which writes every output's bytes (0xAB) at its bound address on the stream, as an
// engine writes an aliased output into its input's memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace trtet_security {

namespace ex = torch_tensorrt::executorch_backend;

class AliasEngine final : public ex::engine::Engine {
 public:
  struct Binding {
    std::string name;
    bool is_input = false;
    ex::DataType dtype = ex::DataType::kFloat32;
    ex::Shape min;  ///< inputs: profile 0's bounds
    ex::Shape max;
    ex::Shape output;              ///< outputs: the shape, unless follows_input >= 0
    int follows_input = -1;        ///< outputs: the shape of that input
    bool data_dependent = false;   ///< outputs: shape inference leaves it open
  };

  AliasEngine(std::vector<Binding> bindings, std::vector<ex::engine::Alias> aliases)
      : bindings_(std::move(bindings)), aliases_(std::move(aliases)) {
    for (const Binding& b : bindings_) {
      ex::engine::IoDesc io;
      io.name = b.name;
      io.is_input = b.is_input;
      io.dtype = b.dtype;
      io.min_shape = b.is_input ? b.min : b.output;
      io.max_shape = b.is_input ? b.max : b.output;
      io_.push_back(io);
    }
    shapes_.resize(bindings_.size());
    addresses_.resize(bindings_.size(), nullptr);
  }

  int io_count() const noexcept override { return static_cast<int>(io_.size()); }
  const ex::engine::IoDesc& io(int index) const noexcept override { return io_[static_cast<std::size_t>(index)]; }
  const std::vector<ex::engine::Alias>& aliases() const noexcept override { return aliases_; }
  int device() const noexcept override { return 0; }

  ex::Status set_input_shape(int index, const ex::Shape& shape) override {
    shapes_[static_cast<std::size_t>(index)] = shape;
    ++set_input_shape_calls;
    return ex::Status::Ok();
  }
  ex::Result<int> infer_shapes() override {
    int unresolved = 0;
    for (std::size_t i = 0; i < bindings_.size(); ++i) {
      const Binding& b = bindings_[i];
      if (b.is_input) continue;
      if (b.data_dependent) {
        ++unresolved;
        continue;
      }
      shapes_[i] = b.follows_input >= 0 ? shapes_[static_cast<std::size_t>(b.follows_input)] : b.output;
    }
    return unresolved;
  }
  ex::Result<ex::Shape> output_shape(int index) const override { return shapes_[static_cast<std::size_t>(index)]; }
  ex::Status set_tensor_address(int index, void* address) override {
    addresses_[static_cast<std::size_t>(index)] = address;
    return ex::Status::Ok();
  }
  ex::Status enqueue(cudaStream_t stream) override {
    ++enqueues;
    for (std::size_t i = 0; i < bindings_.size(); ++i) {
      if (bindings_[i].is_input || addresses_[i] == nullptr) continue;
      const std::size_t bytes =
          static_cast<std::size_t>(shapes_[i].numel()) * ex::element_size(bindings_[i].dtype);
      if (bytes == 0) continue;
      const cudaError_t e = cudaMemsetAsync(addresses_[i], 0xAB, bytes, stream);
      if (e != cudaSuccess) return ex::make_error(ex::ErrorCode::kInternal, "memset: %s", cudaGetErrorString(e));
    }
    return ex::Status::Ok();
  }

  int set_input_shape_calls = 0;
  int enqueues = 0;

 private:
  std::vector<Binding> bindings_;
  std::vector<ex::engine::Alias> aliases_;
  std::vector<ex::engine::IoDesc> io_;
  std::vector<ex::Shape> shapes_;
  std::vector<void*> addresses_;
};

}  // namespace trtet_security
