#include "delegate/boundary_transfers.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/stream_facts.h"
#include "delegate/host_copy_pool.h"
#include "delegate/memory_kind.h"
#include "delegate/policy.h"
#include "delegate/staging_layout.h"
#include "delegate/stream_resolution.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

constexpr std::size_t kMostAlignment = 256;  // what stream-ordered allocation guarantees

/// Slices of `bytes` from `from` to `to`, appended to `tasks`.
void add_slices(std::vector<CopyTask>& tasks, unsigned char* to, const unsigned char* from, std::size_t bytes) {
  for (std::size_t offset = 0; offset < bytes; offset += kCopySlice) {
    tasks.push_back(CopyTask{to + offset, from + offset, std::min(kCopySlice, bytes - offset)});
  }
}

}  // namespace

Result<CopyRoute> route_copy(int device) {
  // The same choice as the delegate's: nothing runs on a default stream while a green context is
  // current.
  TRTET_ASSIGN_OR_RETURN(const StreamChoice choice, current_stream_choice());
  CopyRoute route;
  // A copy is no engine and may run on the per-thread stream itself; never on the legacy stream,
  // which would order it with every blocking stream of the device.
  route.stream = choice.default_handle ? cudaStreamPerThread : choice.caller;
  TRTET_ASSIGN_OR_RETURN(route.capturing, cuda::stream_is_capturing(route.stream));
  TRTET_ASSIGN_OR_RETURN(const int stream_device, cuda::stream_device(route.stream, route.capturing));
  TRTET_CHECK_OR_RETURN(stream_device == device, kInvalidArgument,
                        "the selected CUDA stream belongs to device %d, but the tensor's arena is on device %d: "
                        "select a stream of device %d",
                        stream_device, device, device);
  return route;
}

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
    for (cuda::Event& event : ring->filled) {
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
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, classify_pointer(pointer, device_));
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
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, classify_pointer(source, device_));
  if (kind != MemoryKind::kPageableHost) {
    return copy_direct(destination, source, bytes, route, /*wait_for_host=*/kind == MemoryKind::kPinnedHost);
  }
  TRTET_CHECK_OR_RETURN(!route.capturing, kInvalidArgument,
                        "pageable host memory cannot be copied to the GPU while the stream is being captured into a "
                        "CUDA graph (the copy would synchronize); use pinned host or device memory");
  TRTET_ASSIGN_OR_RETURN(Ring* taken, take_ring());
  RingLease ring(*this, taken);
  TRTET_RETURN_IF_ERROR(stage_in(static_cast<unsigned char*>(destination), static_cast<const unsigned char*>(source),
                                 bytes, route.stream, *ring));
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.staged_copies;
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
  TRTET_ASSIGN_OR_RETURN(const MemoryKind kind, classify_pointer(destination, device_));
  if (kind != MemoryKind::kPageableHost) {
    return copy_direct(destination, source, bytes, route, /*wait_for_host=*/!is_device_accessible(kind));
  }
  TRTET_CHECK_OR_RETURN(!route.capturing, kInvalidArgument,
                        "pageable host memory cannot receive a copy from the GPU while the stream is being captured "
                        "into a CUDA graph (the copy would synchronize); use pinned host or device memory");
  TRTET_ASSIGN_OR_RETURN(Ring* taken, take_ring());
  RingLease ring(*this, taken);
  TRTET_RETURN_IF_ERROR(stage_out(static_cast<unsigned char*>(destination), static_cast<const unsigned char*>(source),
                                  bytes, route.stream, *ring));
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.staged_copies;
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

namespace {

/// One round of a staged copy: up to a ring's chunks, their slices for the copy pool, in order.
struct Round {
  std::vector<CopyTask> tasks;
  std::vector<std::size_t> chunk_ends;   ///< per chunk: the end of its slices in `tasks`
  std::vector<std::size_t> chunk_slots;  ///< per chunk: its ring slot
  std::size_t offset = 0;                ///< of the round in the copy
  std::size_t bytes = 0;
  void start(std::size_t at, std::size_t length) {
    tasks.clear();
    chunk_ends.clear();
    chunk_slots.clear();
    offset = at;
    bytes = length;
  }
  std::size_t chunk_bytes(std::size_t c) const noexcept {
    return std::min(BoundaryTransfers::kChunkBytes, bytes - c * BoundaryTransfers::kChunkBytes);
  }
};

Round& round_scratch() {
  thread_local Round round;  // per-thread scratch: no allocation once warm
  return round;
}

/// Where one chunk's host copy goes and comes from.
struct Slices {
  unsigned char* to;
  const unsigned char* from;
};

/// Starts the round of a `total`-byte copy at `at`: takes its chunks from `ring` in turn and lists
/// each chunk's slices where `chunk(c, slot)` says, after whatever that queues first.
template <typename Ring, typename Chunk>
Status plan_round(Ring& ring, Round& round, std::size_t at, std::size_t total, Chunk chunk) {
  round.start(at, std::min(BoundaryTransfers::kRingSlots * BoundaryTransfers::kChunkBytes, total - at));
  for (std::size_t c = 0; c * BoundaryTransfers::kChunkBytes < round.bytes; ++c) {
    TRTET_ASSIGN_OR_RETURN(const std::size_t slot, ring.take_chunk());
    TRTET_ASSIGN_OR_RETURN(const Slices slices, chunk(c, slot));
    add_slices(round.tasks, slices.to, slices.from, round.chunk_bytes(c));
    round.chunk_ends.push_back(round.tasks.size());
    round.chunk_slots.push_back(slot);
  }
  return Status::Ok();
}

}  // namespace

Result<std::size_t> BoundaryTransfers::Ring::take_chunk() {
  const std::size_t slot = next;
  next = (next + 1) % kRingSlots;
  // The chunk's last transfer (in or out of it) must be done before it is reused.
  if (recorded[slot]) TRTET_RETURN_IF_ERROR(filled[slot].synchronize());
  return slot;
}

Status BoundaryTransfers::Ring::transfer(std::size_t slot, void* to, const void* from, std::size_t bytes,
                                         cudaMemcpyKind kind, cudaStream_t stream) {
  TRTET_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, kind, stream));
  TRTET_RETURN_IF_ERROR(filled[slot].record(stream));
  recorded[slot] = true;
  return Status::Ok();
}

Status BoundaryTransfers::stage_in(unsigned char* destination, const unsigned char* source, std::size_t bytes,
                                   cudaStream_t stream, Ring& ring) {
  // Rounds of up to a ring's chunks: the chunks' earlier transfers are waited for, the workers copy
  // the round's slices into them, and each chunk's transfer is queued as soon as its slices are in.
  HostCopyPool& pool = HostCopyPool::shared();
  Round& round = round_scratch();
  for (std::size_t at = 0; at < bytes; at += kRingSlots * kChunkBytes) {
    TRTET_RETURN_IF_ERROR(plan_round(ring, round, at, bytes, [&](std::size_t c, std::size_t slot) -> Result<Slices> {
      return Slices{ring.chunk(slot), source + at + c * kChunkBytes};
    }));
    if (round.tasks.size() == 1) {  // one slice: no hand-off to the workers
      std::memcpy(round.tasks[0].destination, round.tasks[0].source, round.tasks[0].bytes);
      TRTET_RETURN_IF_ERROR(ring.transfer(round.chunk_slots[0], destination + at, ring.chunk(round.chunk_slots[0]),
                                          round.bytes, cudaMemcpyHostToDevice, stream));
      continue;
    }
    CopyBatch batch(round.tasks);
    pool.begin(batch, round.tasks.size());
    Status queued;
    for (std::size_t c = 0, first = 0; c < round.chunk_ends.size() && queued.ok(); first = round.chunk_ends[c++]) {
      for (std::size_t t = first; t < round.chunk_ends[c]; ++t) pool.help_until_done(batch, t);
      const std::size_t slot = round.chunk_slots[c];
      queued = ring.transfer(slot, destination + at + c * kChunkBytes, ring.chunk(slot), round.chunk_bytes(c),
                             cudaMemcpyHostToDevice, stream);
    }
    pool.finish(batch);
    TRTET_RETURN_IF_ERROR(queued);
  }
  return Status::Ok();
}

Status BoundaryTransfers::stage_out(unsigned char* destination, const unsigned char* source, std::size_t bytes,
                                    cudaStream_t stream, Ring& ring) {
  // Rounds of up to a ring's chunks: every chunk's transfer is queued, then as each lands the
  // workers copy its slices out while later chunks are still in flight.
  HostCopyPool& pool = HostCopyPool::shared();
  Round& round = round_scratch();
  for (std::size_t at = 0; at < bytes; at += kRingSlots * kChunkBytes) {
    TRTET_RETURN_IF_ERROR(plan_round(ring, round, at, bytes, [&](std::size_t c, std::size_t slot) -> Result<Slices> {
      TRTET_RETURN_IF_ERROR(ring.transfer(slot, ring.chunk(slot), source + at + c * kChunkBytes, round.chunk_bytes(c),
                                          cudaMemcpyDeviceToHost, stream));
      return Slices{destination + at + c * kChunkBytes, ring.chunk(slot)};
    }));
    if (round.tasks.size() == 1) {  // one slice: no hand-off to the workers
      TRTET_RETURN_IF_ERROR(ring.filled[round.chunk_slots[0]].synchronize());
      std::memcpy(round.tasks[0].destination, round.tasks[0].source, round.tasks[0].bytes);
      continue;
    }
    CopyBatch batch(round.tasks);
    pool.begin(batch, 0);
    Status waited;
    for (std::size_t c = 0; c < round.chunk_ends.size() && waited.ok(); ++c) {
      waited = ring.filled[round.chunk_slots[c]].synchronize();
      if (waited.ok()) pool.publish(batch, round.chunk_ends[c]);
    }
    pool.finish(batch);
    TRTET_RETURN_IF_ERROR(waited);
  }
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
