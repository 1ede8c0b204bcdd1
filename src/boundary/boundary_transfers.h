// Device-planned arenas and the copies at a delegate's boundary, for programs whose runtime plans
// memory on the GPU and moves tensors in and out with its own copy operators (ExecuTorch 1.5's
// et_copy::_h2d_copy / _d2h_copy). Engine-agnostic: the ExecuTorch adapter
// (backend/cuda_allocator.h) forwards its DeviceAllocator calls here. Pageable copies go through
// the delegate's chunked copy (staging/chunked_copy.h), given this allocator's staging rings.
//
// Note [boundary copies]: a copy takes no stream, so it runs on the stream the delegate itself
// would run on: the caller's (CudaStreamGuard, or ExecuTorch's shared CallerStreamGuard), or,
// without one, this thread's cudaStreamPerThread of the arena's device, with which the delegate
// orders its own work. So under a guard the copy into the arena is queued before the engine on the
// same stream, and the copy out of it after, and the execute contract holds for the whole method:
//   - a copy in from pageable memory goes through pinned staging (a ring of chunks, each with an
//     event) and the shared host copy pool (staging/chunked_copy.h), and returns once the source
//     is read: the transfer itself stays queued;
//   - a copy in from pinned memory is one transfer, waited for (by event) before returning, since
//     the source may be reused as soon as the call returns;
//   - a copy out waits for the transfer (by event: the stream's own work, never the device) and
//     returns with the host data written; pageable destinations are filled chunk by chunk while
//     later chunks are in flight;
//   - inside a stream capture, pinned and device memory are captured (nothing waits), pageable
//     memory is refused with a message, and the capture stays valid (nothing was queued).
// Staging is made when the first arena is allocated (load), never on a call; a copy waits for a
// staging ring another thread's copy holds.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "cuda/pinned_buffer.h"
#include "staging/chunked_copy.h"

namespace torch_tensorrt::executorch_backend::boundary {

/// Where a boundary copy runs, decided from the thread's stream selection (Note [boundary copies]).
struct CopyRoute {
  cudaStream_t stream = nullptr;  ///< never the legacy stream
  bool capturing = false;         ///< the stream is capturing into a graph
  bool selected = false;          ///< the stream is the caller's selection, not cudaStreamPerThread
};

/// The route for a copy on `device`'s memory: the selected stream, checked to be on `device`, or
/// without a selection this thread's cudaStreamPerThread (the caller makes `device` current).
/// kInvalidArgument for a stream of another device, and for a green context current with no
/// stream of it selected.
Result<CopyRoute> route_copy(int device);

/// Counters for tests and tools.
struct BoundaryStats {
  std::uint64_t arenas = 0;          ///< arenas allocated now
  std::uint64_t arena_bytes = 0;     ///< their bytes
  std::uint64_t staged_copies = 0;   ///< copies through pinned staging (pageable host memory)
  /// Of the staged copies' chunk transfers, those made by the copy kernel (small chunks on a
  /// partition's stream, Note [small copies] in staging/small_copy.cu) and by the copy engines.
  std::uint64_t kernel_transfers = 0;
  std::uint64_t engine_transfers = 0;
  std::uint64_t direct_copies = 0;   ///< one-transfer copies (pinned, device or managed memory)
  std::uint64_t captured_copies = 0; ///< of direct copies, those recorded into a capture
  std::uint64_t staging_bytes = 0;   ///< pinned staging held
};

/// One device's arenas and boundary copies. Made on first use and kept for the process: the
/// ExecuTorch registry holds its allocator for good, and arenas may outlive any one program.
/// Thread-safe.
class BoundaryTransfers {
 public:
  /// Staging: rings of kRingSlots chunks of kChunkBytes (the chunk policy's smallest chunk, so a
  /// copy moves in chunks of this size), kRings of them per device.
  static constexpr std::size_t kChunkBytes = staging::kMinChunk;
  static constexpr std::size_t kRingSlots = 8;
  static constexpr std::size_t kRings = 2;

  /// The transfers of `device`, made on first use. kInvalidArgument for a device index this
  /// machine does not have, kNoDevice without a GPU.
  static Result<BoundaryTransfers*> of_device(int device);

  BoundaryTransfers(const BoundaryTransfers&) = delete;  // shared by every program, for good
  BoundaryTransfers& operator=(const BoundaryTransfers&) = delete;

  /// An arena of `bytes` on this device, from its own memory pool, aligned to `alignment` (a power
  /// of two, at most 256). Also makes the staging on first use. For load time: it waits for the
  /// device's own stream, never for the device.
  Result<void*> allocate(std::size_t bytes, std::size_t alignment);
  /// Frees an arena of allocate() in stream order; an unknown pointer is logged and left alone.
  void deallocate(void* arena) noexcept;

  /// Copies `bytes` from host (or device) memory at `source` into device memory at `destination`
  /// (Note [boundary copies]). `destination` must lie in an arena of this device, or be device
  /// memory of it; kInvalidArgument otherwise, and for a range past the arena's end.
  Status copy_to_device(void* destination, const void* source, std::size_t bytes);
  /// Copies `bytes` of device memory at `source` to host (or device) memory at `destination` and,
  /// unless the stream is capturing, returns once host memory holds them (Note [boundary copies]).
  Status copy_to_host(void* destination, const void* source, std::size_t bytes);

  int device() const noexcept { return device_; }
  BoundaryStats stats() const;

 private:
  /// One copy's staging: kRingSlots pinned chunks taken in turn, each reused once its last
  /// transfer is done, and the chunked copy that moves data through them.
  struct Ring final : staging::PinnedChunks {
    cuda::PinnedBuffer memory;                     ///< kRingSlots chunks
    std::array<cuda::Event, kRingSlots> landed{};  ///< per chunk: after the transfer that last used it
    std::array<bool, kRingSlots> used{};
    cuda::Event done;                              ///< a direct copy's completion
    std::size_t next = 0;                          ///< the chunk the next transfer takes
    staging::ChunkedCopy copies;
    /// The next chunk in turn, once its last transfer is done (a host wait on its event).
    Result<staging::PinnedChunk> take(std::size_t offset, std::size_t bytes) override;
    std::size_t most_chunks() const noexcept override { return kRingSlots; }
    std::size_t most_chunk_bytes() const noexcept override { return kChunkBytes; }
    /// cudaHostAlloc's memory is device-mapped: small chunks take the kernel where the copy's stream
    /// is a partition's (set by the copy that holds the ring).
    bool small_by_kernel() const noexcept override { return on_partition; }
    bool on_partition = false;
  };
  /// A ring held by one copy, given back at scope exit.
  class RingLease;

  explicit BoundaryTransfers(int device) noexcept : device_(device) {}
  Status initialize();
  Status ensure_staging();
  Result<Ring*> take_ring();
  void give_back(Ring* ring) noexcept;
  /// Ok when [pointer, pointer + bytes) is device memory of this device (in an arena, within it).
  Status check_device_range(const void* pointer, std::size_t bytes, const char* what);
  Status copy_direct(void* destination, const void* source, std::size_t bytes, const CopyRoute& route,
                     bool wait_for_host);

  const int device_;
  cudaStream_t own_stream_ = nullptr;  ///< arenas are allocated and freed in order here
  cuda::MemoryPool pool_;              ///< the arenas' memory (empty where the device has no pools)
  mutable std::mutex mutex_;           ///< guards what follows
  std::map<std::uintptr_t, std::size_t> arenas_;  ///< start -> bytes
  std::vector<std::unique_ptr<Ring>> rings_;
  std::vector<Ring*> free_rings_;
  std::condition_variable ring_returned_;
  BoundaryStats stats_;
};

}  // namespace torch_tensorrt::executorch_backend::boundary
