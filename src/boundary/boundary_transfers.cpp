#include "boundary/boundary_transfers.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/stream_facts.h"
#include "session/memory_kind.h"
#include "session/policy.h"
#include "session/stream_resolution.h"

namespace torch_tensorrt::executorch_backend::boundary {
namespace {

using delegate::MemoryKind;

constexpr std::size_t kMostAlignment = 256;  // what stream-ordered allocation guarantees

}  // namespace

Result<CopyRoute> route_copy(int device) {
  // The same choice as the delegate's: nothing runs on a default stream while a green context is
  // current.
  TRTET_ASSIGN_OR_RETURN(const delegate::StreamChoice choice, delegate::current_stream_choice());
  CopyRoute route;
  // A copy is no engine and may run on the per-thread stream itself; never on the legacy stream,
  // which would order it with every blocking stream of the device.
  route.stream = choice.default_handle ? cudaStreamPerThread : choice.caller;
  route.selected = !choice.default_handle;
  TRTET_ASSIGN_OR_RETURN(route.capturing, cuda::stream_is_capturing(route.stream));
  TRTET_ASSIGN_OR_RETURN(const int stream_device, cuda::stream_device(route.stream, route.capturing));
  TRTET_CHECK_OR_RETURN(stream_device == device, kInvalidArgument,
                        "the selected CUDA stream belongs to device %d, but the tensor's arena is on device %d: "
                        "select a stream of device %d",
                        stream_device, device, device);
  return route;
}

namespace {

/// True when the route's stream runs on a green context, so a ring's small chunks may move by the
/// copy kernel inside it (Note [small copies] in staging/small_copy.cu). cudaStreamPerThread is the
/// primary context's.
Result<bool> on_partition(const CopyRoute& route) {
  if (!route.selected) return false;
  TRTET_ASSIGN_OR_RETURN(const CUgreenCtx green, cuda::stream_green_context(route.stream));
  return green != nullptr;
}

/// A ring's chunk transfers so far, by the copy kernel and by the copy engines.
struct TransferCounts {
  std::size_t kernel = 0, engines = 0;
};
TransferCounts counts_of(const staging::ChunkedCopy& copies) noexcept {
  return TransferCounts{copies.kernel_transfers(), copies.engine_transfers()};
}
/// Adds one copy's transfers (a ring's counts before and after it) to `stats`.
void add_transfers(BoundaryStats& stats, const TransferCounts& before, const TransferCounts& after) noexcept {
  stats.kernel_transfers += after.kernel - before.kernel;
  stats.engine_transfers += after.engines - before.engines;
}

}  // namespace

class BoundaryTransfers::RingLease {
 public:
  RingLease(BoundaryTransfers& owner, Ring* ring) noexcept : owner_(owner), ring_(ring) {}
  ~RingLease() { owner_.give_back(ring_); }
  RingLease(const RingLease&) = delete;             // gives the ring back once
  RingLease& operator=(const RingLease&) = delete;
  Ring& operator*() const noexcept { return *ring_; }

 private:
  BoundaryTransfers& owner_;
  Ring* ring_;
};

Result<BoundaryTransfers*> BoundaryTransfers::of_device(int device) {
  TRTET_RETURN_IF_ERROR(cuda::device_count().status());
  TRTET_RETURN_IF_ERROR(cuda::check_device_index(device));
  // One per device, for the process (never destroyed: the ExecuTorch registry points here for good,
  // and static destructors run after the driver may be gone).
  static std::mutex made_mutex;
  static std::map<int, BoundaryTransfers*>& made = *new std::map<int, BoundaryTransfers*>();
  std::lock_guard<std::mutex> lock(made_mutex);
  auto found = made.find(device);
  if (found != made.end()) return found->second;
  auto* transfers = new BoundaryTransfers(device);
  const Status initialized = transfers->initialize();
  if (!initialized.ok()) {
    delete transfers;
    return initialized;
  }
  made.emplace(device, transfers);
  return transfers;
}

Status BoundaryTransfers::initialize() {
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  // The ring's small chunks move by the copy kernel, loaded now rather than at a copy's first
  // launch, whose load would wait for the work running on the device (Note [small copies]).
  staging::prepare_small_copies();
  Result<cuda::MemoryPool> pool = cuda::MemoryPool::device_memory(device_);
  if (pool.ok()) {
    pool_ = std::move(pool).value();
  } else {
    log(LogLevel::kWarning, "device %d: arenas fall back to cudaMallocAsync's default pool: %s", device_,
        pool.status().message().c_str());
  }
  return Status::Ok();
}

Status BoundaryTransfers::ensure_staging() {
  // Called with mutex_ held.
  if (!rings_.empty()) return Status::Ok();
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  std::vector<std::unique_ptr<Ring>> rings;
  for (std::size_t r = 0; r < kRings; ++r) {
    auto ring = std::make_unique<Ring>();
    TRTET_ASSIGN_OR_RETURN(ring->memory, cuda::PinnedBuffer::allocate(kRingSlots * kChunkBytes));
    for (cuda::Event& event : ring->landed) {
      TRTET_ASSIGN_OR_RETURN(event, cuda::Event::create());
    }
    TRTET_ASSIGN_OR_RETURN(ring->done, cuda::Event::create());
    rings.push_back(std::move(ring));
  }
  for (auto& ring : rings) {
    free_rings_.push_back(ring.get());
    rings_.push_back(std::move(ring));
  }
  stats_.staging_bytes = kRings * kRingSlots * kChunkBytes;
  return Status::Ok();
}

Result<void*> BoundaryTransfers::allocate(std::size_t bytes, std::size_t alignment) {
  TRTET_CHECK_OR_RETURN(alignment != 0 && (alignment & (alignment - 1)) == 0, kInvalidArgument,
                        "arena alignment %zu is not a power of two", alignment);
  TRTET_CHECK_OR_RETURN(alignment <= kMostAlignment, kNotSupported,
                        "arena alignment %zu exceeds the %zu bytes stream-ordered allocation guarantees", alignment,
                        kMostAlignment);
  std::lock_guard<std::mutex> lock(mutex_);
  TRTET_RETURN_IF_ERROR(ensure_staging());
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  void* arena = nullptr;
  const std::size_t asked = std::max<std::size_t>(bytes, 1);
  if (pool_) {
    TRTET_CUDA_CHECK(cudaMallocFromPoolAsync(&arena, asked, pool_.get(), own_stream_));
  } else {
    TRTET_CUDA_CHECK(cudaMallocAsync(&arena, asked, own_stream_));
  }
  // The arena is used on other streams from here on: its allocation must have happened.
  const cudaError_t synced = cudaStreamSynchronize(own_stream_);
  if (synced != cudaSuccess) {
    TRTET_CUDA_WARN(cudaFreeAsync(arena, own_stream_));
    TRTET_CUDA_CHECK(synced);
  }
  if ((reinterpret_cast<std::uintptr_t>(arena) & (alignment - 1)) != 0) {
    TRTET_CUDA_WARN(cudaFreeAsync(arena, own_stream_));
    return make_error(ErrorCode::kInternal, "arena %p of %zu bytes is not aligned to %zu", arena, bytes, alignment);
  }
  arenas_.emplace(reinterpret_cast<std::uintptr_t>(arena), bytes);
  ++stats_.arenas;
  stats_.arena_bytes += bytes;
  return arena;
}

void BoundaryTransfers::deallocate(void* arena) noexcept {
  if (arena == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = arenas_.find(reinterpret_cast<std::uintptr_t>(arena));
  if (found == arenas_.end()) {
    log(LogLevel::kWarning, "device %d: deallocate of %p, which is no arena of this allocator; left alone", device_,
        arena);
    return;
  }
  cuda::DeviceGuard guard(device_);
  if (!guard.status().ok()) {
    log(LogLevel::kWarning, "device %d: cannot free arena %p: %s", device_, arena, guard.status().message().c_str());
    return;
  }
  // The delegate's session waits for its own work when its method is destroyed, before the
  // method's arenas go; the copies into and out of them are ordered before or waited for.
  TRTET_CUDA_WARN(cudaFreeAsync(arena, own_stream_));
  --stats_.arenas;
  stats_.arena_bytes -= found->second;
  arenas_.erase(found);
}

BoundaryStats BoundaryTransfers::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Status BoundaryTransfers::check_device_range(const void* pointer, std::size_t bytes, const char* what) {
  const auto start = reinterpret_cast<std::uintptr_t>(pointer);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto after = arenas_.upper_bound(start);
    if (after != arenas_.begin()) {
      const auto& arena = *std::prev(after);
      if (start < arena.first + arena.second) {
        TRTET_CHECK_OR_RETURN(bytes <= arena.first + arena.second - start, kInvalidArgument,
                              "the %s of %zu bytes at offset %zu runs past the end of its %zu-byte arena on device %d",
                              what, bytes, static_cast<std::size_t>(start - arena.first), arena.second, device_);
        return Status::Ok();
      }
    }
  }
  // Not an arena of ours (a tensor the application made): it must be memory of this device.
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, delegate::classify_pointer(pointer, device_));
  TRTET_CHECK_OR_RETURN(is_device_accessible(kind), kInvalidArgument,
                        "the %s at %p is %s, not memory of device %d", what, pointer, to_string(kind), device_);
  return Status::Ok();
}

Result<BoundaryTransfers::Ring*> BoundaryTransfers::take_ring() {
  std::unique_lock<std::mutex> lock(mutex_);
  TRTET_RETURN_IF_ERROR(ensure_staging());
  ring_returned_.wait(lock, [this] { return !free_rings_.empty(); });
  Ring* ring = free_rings_.back();
  free_rings_.pop_back();
  return ring;
}

void BoundaryTransfers::give_back(Ring* ring) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_rings_.push_back(ring);
  }
  ring_returned_.notify_one();
}

Status BoundaryTransfers::copy_to_device(void* destination, const void* source, std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
  TRTET_CHECK_OR_RETURN(destination != nullptr && source != nullptr, kInvalidArgument,
                        "copy to device %d with a null pointer", device_);
  TRTET_RETURN_IF_ERROR(check_device_range(destination, bytes, "destination"));
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  TRTET_ASSIGN_OR_RETURN(const CopyRoute route, route_copy(device_));
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, delegate::classify_pointer(source, device_));
  if (kind != MemoryKind::kPageableHost) {
    return copy_direct(destination, source, bytes, route, /*wait_for_host=*/kind == MemoryKind::kPinnedHost);
  }
  TRTET_CHECK_OR_RETURN(!route.capturing, kInvalidArgument,
                        "pageable host memory cannot be copied to the GPU while the stream is being captured into a "
                        "CUDA graph (the copy would synchronize); use pinned host or device memory");
  TRTET_ASSIGN_OR_RETURN(const bool partition, on_partition(route));
  TRTET_ASSIGN_OR_RETURN(Ring* taken, take_ring());
  RingLease ring(*this, taken);
  (*ring).on_partition = partition;
  const TransferCounts before = counts_of((*ring).copies);
  TRTET_RETURN_IF_ERROR((*ring).copies.send(static_cast<unsigned char*>(destination),
                                             static_cast<const unsigned char*>(source), bytes, route.stream, *ring));
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.staged_copies;
  add_transfers(stats_, before, counts_of((*ring).copies));
  return Status::Ok();
}

Status BoundaryTransfers::copy_to_host(void* destination, const void* source, std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
  TRTET_CHECK_OR_RETURN(destination != nullptr && source != nullptr, kInvalidArgument,
                        "copy from device %d with a null pointer", device_);
  TRTET_RETURN_IF_ERROR(check_device_range(source, bytes, "source"));
  cuda::DeviceGuard guard(device_);
  TRTET_RETURN_IF_ERROR(guard.status());
  TRTET_ASSIGN_OR_RETURN(const CopyRoute route, route_copy(device_));
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, delegate::classify_pointer(destination, device_));
  if (kind != MemoryKind::kPageableHost) {
    return copy_direct(destination, source, bytes, route, /*wait_for_host=*/!delegate::is_device_accessible(kind));
  }
  TRTET_CHECK_OR_RETURN(!route.capturing, kInvalidArgument,
                        "pageable host memory cannot receive a copy from the GPU while the stream is being captured "
                        "into a CUDA graph (the copy would synchronize); use pinned host or device memory");
  TRTET_ASSIGN_OR_RETURN(const bool partition, on_partition(route));
  TRTET_ASSIGN_OR_RETURN(Ring* taken, take_ring());
  RingLease ring(*this, taken);
  (*ring).on_partition = partition;
  const TransferCounts before = counts_of((*ring).copies);
  TRTET_RETURN_IF_ERROR((*ring).copies.receive(static_cast<unsigned char*>(destination),
                                                static_cast<const unsigned char*>(source), bytes, route.stream, *ring));
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.staged_copies;
  add_transfers(stats_, before, counts_of((*ring).copies));
  return Status::Ok();
}

Status BoundaryTransfers::copy_direct(void* destination, const void* source, std::size_t bytes,
                                      const CopyRoute& route, bool wait_for_host) {
  TRTET_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, route.stream));
  if (wait_for_host && !route.capturing) {
    // Host memory is free (a source) or written (a destination) when the call returns.
    TRTET_ASSIGN_OR_RETURN(Ring* taken, take_ring());
    RingLease ring(*this, taken);
    TRTET_RETURN_IF_ERROR((*ring).done.record(route.stream));
    TRTET_RETURN_IF_ERROR((*ring).done.synchronize());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.direct_copies;
  if (route.capturing) ++stats_.captured_copies;
  return Status::Ok();
}

Result<staging::PinnedChunk> BoundaryTransfers::Ring::take(std::size_t /*offset*/, std::size_t /*bytes*/) {
  const std::size_t slot = next;
  next = (next + 1) % kRingSlots;
  // The chunk's last transfer (in or out of it) must be done before it is reused; the copy that
  // took it last has copied its host side already.
  if (used[slot]) TRTET_RETURN_IF_ERROR(landed[slot].synchronize());
  used[slot] = true;
  return staging::PinnedChunk{static_cast<unsigned char*>(memory.data()) + slot * kChunkBytes, &landed[slot]};
}

}  // namespace torch_tensorrt::executorch_backend::boundary
