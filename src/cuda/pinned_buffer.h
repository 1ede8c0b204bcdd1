// Move-only owner of page-locked host memory (cudaHostAlloc / cudaFreeHost).
#pragma once

#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

class PinnedBuffer {
 public:
  PinnedBuffer() noexcept = default;  ///< empty: owns nothing
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;             // one owner per allocation
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;

  /// `bytes` of pinned, portable host memory. Note: cudaFreeHost of a buffer synchronizes the
  /// device; owners grow these at init or between calls, never while another partition must not wait.
  static Result<PinnedBuffer> allocate(std::size_t bytes);

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }
  void reset() noexcept;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::cuda
