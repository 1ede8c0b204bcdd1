// Move-only owner of stream-ordered device memory (cudaMallocAsync / cudaFreeAsync, a pool's, or
// memory an allocator of its own sub-allocates, such as the staging layer's arenas).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

/// Memory that hands out allocations of its own and takes them back in stream order (the staging
/// layer's arenas). Lives longer than every buffer it allocated.
class StreamOrderedAllocator {
 public:
  /// Frees `data` (one of its allocations) in order on `stream`. No-throw; failures are logged.
  virtual void free(void* data, cudaStream_t stream) noexcept = 0;

 protected:
  ~StreamOrderedAllocator() = default;
};

/// Device memory allocated and freed in stream order: neither call synchronizes the device or
/// any other green context. The buffer remembers the stream it was last ordered on and frees
/// itself there.
class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;  ///< empty: owns nothing
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;             // one owner per allocation
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(other.data_), bytes_(other.bytes_), stream_(other.stream_), allocator_(other.allocator_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
    other.allocator_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  /// `bytes` of device memory, usable in order on `stream` (on the current device).
  static Result<DeviceBuffer> allocate(std::size_t bytes, cudaStream_t stream);
  /// `bytes` from `pool` in order on `stream` (cudaMallocFromPoolAsync): device memory, or pinned
  /// host memory for a pool of pinned host memory (MemoryPool::pinned_host_memory).
  static Result<DeviceBuffer> allocate_from(cudaMemPool_t pool, std::size_t bytes, cudaStream_t stream);
  /// Owns `bytes` at `data`, which `allocator` allocated in order on `stream`; freed back to it.
  static DeviceBuffer adopt(StreamOrderedAllocator& allocator, void* data, std::size_t bytes,
                            cudaStream_t stream) noexcept {
    DeviceBuffer buffer;
    buffer.data_ = data;
    buffer.bytes_ = bytes;
    buffer.stream_ = stream;
    buffer.allocator_ = &allocator;
    return buffer;
  }

  /// Later uses happen on `stream`: the free is ordered there.
  void set_stream(cudaStream_t stream) noexcept { stream_ = stream; }

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  cudaStream_t stream() const noexcept { return stream_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

  /// Frees in order on the remembered stream (no-throw; failures are logged).
  void reset() noexcept;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  StreamOrderedAllocator* allocator_ = nullptr;  ///< where the memory came from (it outlives us), or none
};

}  // namespace torch_tensorrt::executorch_backend::cuda
