// A test-side tensor: owns device, pinned, pageable or managed memory and hands the delegate a
// TensorView whose resize/set_data callbacks act on it, as ExecuTorch's tensors would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/memory.h"
#include "common/random.h"
#include "common/status.h"
#include "session/tensor_view.h"

namespace trtet_test {

namespace ex = torch_tensorrt::executorch_backend;

/// Not copyable or movable: views point back at it through their context.
class OwnedTensor {
 public:
  /// `capacity_elements` (0: shape's element count, at least 1) float32 elements of `memory`.
  OwnedTensor(Memory memory, const ex::Shape& shape, std::size_t capacity_elements = 0,
              ex::DataType dtype = ex::DataType::kFloat32);
  ~OwnedTensor();
  OwnedTensor(const OwnedTensor&) = delete;             // views hold a pointer to this object
  OwnedTensor& operator=(const OwnedTensor&) = delete;

  /// Ok unless allocation failed.
  const ex::Status& status() const noexcept { return status_; }

  /// A view with the resize and set_data callbacks (null where disabled below).
  ex::delegate::TensorView view();

  // ---- knobs ----
  bool resizable = true;        ///< view().resize is set
  bool can_set_data = true;     ///< view().set_data is set
  bool grow_on_resize = false;  ///< resize beyond capacity reallocates (else fails kInvalidArgument)
  ex::delegate::MemoryHint hint = ex::delegate::MemoryHint::kUnknown;

  // ---- host access (synchronous; the caller makes sure no GPU work is in flight on it) ----
  void write(const std::vector<float>& values);
  /// The current shape's elements, from wherever `data()` points (the aliased memory after set_data).
  std::vector<float> read() const;
  /// Fills the whole capacity with kPoison.
  void poison();
  /// True when every element of the capacity still holds kPoison.
  bool poison_intact() const;

  void* data() const noexcept { return current_; }
  void* own_data() const noexcept { return block_.data(); }
  const ex::Shape& shape() const noexcept { return shape_; }
  std::size_t capacity_bytes() const noexcept { return capacity_bytes_; }
  Memory memory() const noexcept { return memory_; }
  int resize_calls = 0;
  int set_data_calls = 0;

 private:
  static ex::Status resize_callback(void* context, ex::delegate::TensorView& view, const ex::Shape& shape);
  static ex::Status set_data_callback(void* context, ex::delegate::TensorView& view, void* data);
  ex::Status allocate(std::size_t bytes);
  void copy_in(void* dst, const void* src, std::size_t bytes) const;
  void copy_out(void* dst, const void* src, std::size_t bytes) const;
  bool is_device_pointer(const void* p) const;

  Memory memory_;
  ex::DataType dtype_;
  ex::Shape shape_;
  MemoryBlock block_;        ///< owned allocation
  void* current_ = nullptr;  ///< block_'s, or what set_data pointed the tensor at
  std::size_t capacity_bytes_ = 0;
  ex::Status status_;
};

}  // namespace trtet_test
