#include "session/owned_tensor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace trtet_test {

OwnedTensor::OwnedTensor(Memory memory, const ex::Shape& shape, std::size_t capacity_elements, ex::DataType dtype)
    : memory_(memory), dtype_(dtype), shape_(shape) {
  std::size_t elements = capacity_elements != 0 ? capacity_elements : static_cast<std::size_t>(shape.numel());
  if (elements == 0) elements = 1;
  status_ = allocate(elements * ex::element_size(dtype));
}

OwnedTensor::~OwnedTensor() = default;

ex::Status OwnedTensor::allocate(std::size_t bytes) {
  // Test-only allocations: synchronous calls are fine here, never inside a timed section.
  current_ = nullptr;
  capacity_bytes_ = 0;
  block_.reset();
  auto block = MemoryBlock::allocate(memory_, bytes);
  TRTET_RETURN_IF_ERROR(block.status());
  block_ = std::move(block).value();
  current_ = block_.data();
  capacity_bytes_ = bytes;
  return ex::Status::Ok();
}

ex::delegate::TensorView OwnedTensor::view() {
  return ex::delegate::TensorView{current_, capacity_bytes_, shape_, dtype_, hint,
                                  resizable ? &OwnedTensor::resize_callback : nullptr,
                                  can_set_data ? &OwnedTensor::set_data_callback : nullptr, this};
}

ex::Status OwnedTensor::resize_callback(void* context, ex::delegate::TensorView& view, const ex::Shape& shape) {
  auto* self = static_cast<OwnedTensor*>(context);
  ++self->resize_calls;
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * ex::element_size(self->dtype_);
  if (bytes > self->capacity_bytes_) {
    TRTET_CHECK_OR_RETURN(self->grow_on_resize, kInvalidArgument,
                          "test tensor: resize to %s needs %zu bytes, capacity is %zu", shape.to_string().c_str(),
                          bytes, self->capacity_bytes_);
    TRTET_RETURN_IF_ERROR(self->allocate(bytes));
  }
  self->shape_ = shape;
  view.shape = shape;
  view.data = self->current_;
  view.capacity_bytes = self->capacity_bytes_;
  return ex::Status::Ok();
}

ex::Status OwnedTensor::set_data_callback(void* context, ex::delegate::TensorView& view, void* data) {
  auto* self = static_cast<OwnedTensor*>(context);
  ++self->set_data_calls;
  self->current_ = data;
  view.data = data;
  return ex::Status::Ok();
}

bool OwnedTensor::is_device_pointer(const void* p) const {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
}

void OwnedTensor::copy_in(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0) return;
  if (is_device_pointer(dst)) {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) std::abort();
    // A pageable-source cudaMemcpy may return before its transfer lands, and the legacy stream
    // does not order the non-blocking streams the tests run on: wait for it here.
    if (cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) std::abort();
  } else {
    std::memcpy(dst, src, bytes);
  }
}

void OwnedTensor::copy_out(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0) return;
  if (is_device_pointer(src)) {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) std::abort();
  } else {
    std::memcpy(dst, src, bytes);
  }
}

void OwnedTensor::write(const std::vector<float>& values) {
  copy_in(current_, values.data(), std::min(values.size() * sizeof(float), capacity_bytes_));
}

std::vector<float> OwnedTensor::read() const {
  std::vector<float> values(static_cast<std::size_t>(shape_.numel()));
  copy_out(values.data(), current_, values.size() * sizeof(float));
  return values;
}

void OwnedTensor::poison() { poison_floats(block_.data(), capacity_bytes_ / sizeof(float)); }

bool OwnedTensor::poison_intact() const {
  std::vector<float> values(capacity_bytes_ / sizeof(float));
  copy_out(values.data(), block_.data(), values.size() * sizeof(float));
  for (float v : values) {
    if (v != kPoison) return false;
  }
  return true;
}

}  // namespace trtet_test
