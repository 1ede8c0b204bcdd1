// Move-only owner of stream-ordered device memory (cudaMallocAsync / cudaFreeAsync, a pool's, or a
// staging arena's).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::cuda {

class StagingArena;
class StagingPool;

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
      : data_(other.data_), bytes_(other.bytes_), stream_(other.stream_), arena_(other.arena_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
    other.arena_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  /// `bytes` of device memory, usable in order on `stream` (on the current device).
  static Result<DeviceBuffer> allocate(std::size_t bytes, cudaStream_t stream);
  /// `bytes` from `pool` in order on `stream` (cudaMallocFromPoolAsync): device memory, or pinned
  /// host memory for a pool of pinned host memory (MemoryPool::pinned_host_memory).
  static Result<DeviceBuffer> allocate_from(cudaMemPool_t pool, std::size_t bytes, cudaStream_t stream);
  /// `bytes` of the process's staging (`pool`, memory_pool.h: an arena's or a pool's) in order on
  /// `stream`.
  static Result<DeviceBuffer> allocate_from(StagingPool* pool, std::size_t bytes, cudaStream_t stream);

  /// Later uses happen on `stream`: the free is ordered there.
  void set_stream(cudaStream_t stream) noexcept { stream_ = stream; }

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  cudaStream_t stream() const noexcept { return stream_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

  /// Frees in order on the remembered stream (no-throw; failures are logged).
  void reset() noexcept;

 private:
  friend class StagingPool;
  /// Memory `arena` allocated; freed back to it.
  DeviceBuffer(StagingArena* arena, void* data, std::size_t bytes, cudaStream_t stream) noexcept
      : data_(data), bytes_(bytes), stream_(stream), arena_(arena) {}

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  StagingArena* arena_ = nullptr;  ///< the arena the memory came from (never destroyed), or none
};

}  // namespace torch_tensorrt::executorch_backend::cuda
