#include "staging/staging.h"

#include <algorithm>
#include <cstring>

#include "common/load_trace.h"
#include "common/log.h"
#include "cuda/check.h"
#include "engine/types.h"
#include "staging/host_copy_pool.h"
#include "staging/layout.h"
#include "staging/pool.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

/// The device memory bound to empty tensors (a valid, aligned address; nothing is read or written).
constexpr std::size_t kEmptyTensorBytes = 256;

/// True when some profile lets input `index` be empty (a zero dimension in its minimum).
bool may_be_empty(const engine::Engine& engine, int index) {
  for (int p = 0; p < engine.profile_count(); ++p) {
    if (engine.input_bounds(p, index).min.numel() == 0) return true;
  }
  return false;
}

}  // namespace

Status StagingStore::initialize(const engine::Engine& engine, int slots, SharedEvent completion) {
  const int count = engine.io_count();
  completion_ = std::move(completion);
  bindings_ = static_cast<std::size_t>(count);
  slots_ = slots;
  device_ = engine.device();
  // The process's pools, shared by every session (Note [shared staging pools] in pool.cpp).
  // Nothing is allocated here.
  TRTET_ASSIGN_OR_RETURN(device_pool_, staging_pool(PoolKind::kDevice, device_));
  const Result<StagingPool*> pool = staging_pool(PoolKind::kPinnedHost, device_);
  if (pool.ok()) {
    host_pool_ = *pool;
  } else {
    (void)cudaGetLastError();
    log(LogLevel::kWarning, "host staging falls back to cudaHostAlloc, whose growth may synchronize the device: %s",
        pool.status().to_string().c_str());
  }
  entries_.clear();
  entries_.resize(bindings_ * static_cast<std::size_t>(slots));
  max_bytes_.assign(bindings_, kUnbounded);
  for (int i = 0; i < count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    if (!io.is_input) continue;
    std::size_t largest = 0;
    for (int p = 0; p < engine.profile_count(); ++p) {
      largest = std::max(largest, byte_size(engine.input_bounds(p, i).max, io.dtype));  // kUnbounded on overflow
    }
    max_bytes_[static_cast<std::size_t>(i)] = largest;
  }
  return Status::Ok();
}

// Note [staging budget]: the first calls of a session with host I/O would grow its staging,
// paying for new device memory and for page-locking new host memory (milliseconds, against a
// fraction of one for a steady call). With SessionOptions::staging_budget_bytes, initialize()
// makes that staging instead. Every binding that may be staged (neither an output written in place
// nor the input it aliases, which must be on the device) takes its largest size twice: device
// staging, used by any host I/O, and pinned host staging, used by pageable I/O. Bindings are taken
// in order while the total stays within the budget; one that does not fit, or whose largest size
// is unknown, grows on demand as without a budget, and initialize warns about it once.
//
// Largest sizes: an input's is its maximum over every profile's bounds. An output's comes from
// shape inference with every input at profile 0's maximum (profile 0 is selected when the engine
// is made). Other profiles' outputs are inferred when a call first selects that profile, not
// here: selecting a profile may allocate its engine memory, which a session that never uses the
// profile should not hold. So the first call on another profile may grow an output's staging, to
// that profile's output size and no further. Also made here: one chunk event per chunk of the
// largest pageable outputs, the process's host copy workers, and the address bound to empty
// tensors where a profile allows an empty input. Once the allocations are complete, the caller has
// every page of the pinned host staging written (touch_host_staging): the host's first touch of a
// page costs a fault, which a first pageable call would otherwise pay inside its copies
// (first_calls.pageable_budget, docs/PERFORMANCE.md).
Status StagingStore::prepare_budget(engine::Engine& engine, std::size_t budget, bool host_accessible,
                                    cudaStream_t stream) {
  const int count = engine.io_count();
  const Status learned = learn_output_bounds(engine, 0, /*first=*/true);
  if (!learned.ok()) log(LogLevel::kDebug, "output sizes at profile 0's maximum unknown: %s", learned.to_string().c_str());
  // Where the device reads host memory directly, nothing is ever staged.
  if (host_accessible) return Status::Ok();

  std::vector<bool> in_place(bindings_, false);
  for (const engine::Alias& alias : engine.aliases()) {
    in_place[static_cast<std::size_t>(alias.output)] = true;
    in_place[static_cast<std::size_t>(alias.input)] = true;
  }
  std::size_t total = 0;
  std::size_t output_chunks = 0;
  bool chunked = false;
  for (int i = 0; i < count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    const std::size_t bytes = max_bytes_[static_cast<std::size_t>(i)];
    if (in_place[static_cast<std::size_t>(i)] || bytes == 0) continue;
    if (bytes == kUnbounded) {
      log(LogLevel::kWarning,
          "%s %d (\"%s\"): its largest size is not known, so none of the staging budget (%zu bytes) is set aside "
          "for it; its staging grows on demand",
          io.is_input ? "input" : "output", i, io.name.c_str(), budget);
      continue;
    }
    if (bytes > (budget - total) / 2) {
      log(LogLevel::kWarning,
          "%s %d (\"%s\") needs %zu bytes of device and %zu of pinned host staging at its largest, more than the "
          "%zu bytes left of the staging budget (%zu bytes); its staging grows on demand",
          io.is_input ? "input" : "output", i, io.name.c_str(), bytes, bytes, budget - total, budget);
      continue;
    }
    Entry& staging = entries_[at(0, i)];
    TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer device, allocate_from(device_pool_, bytes, stream));
    staging.device = std::make_shared<cuda::DeviceBuffer>(std::move(device));
    if (host_pool_ != nullptr) {
      TRTET_ASSIGN_OR_RETURN(staging.host, allocate_from(host_pool_, bytes, stream));
    } else {
      TRTET_ASSIGN_OR_RETURN(staging.host_fallback, cuda::PinnedBuffer::allocate(bytes));
    }
    total += 2 * bytes;
    if (!io.is_input) output_chunks += chunk_count(bytes);
    chunked = chunked || bytes > chunk_bytes(bytes);
  }
  budgeted_bytes_ = total;
  note_held();
  if (chunked) (void)HostCopyPool::shared().workers();  // starts the workers, once per process
  for (int i = 0; i < count; ++i) {
    if (engine.io(i).is_input && may_be_empty(engine, i)) {
      TRTET_RETURN_IF_ERROR(ensure_empty_tensor(i, engine.io(i).name.c_str(), stream, /*capturing=*/false));
      break;
    }
  }
  return ensure_chunk_events(output_chunks);
}

Status StagingStore::learn_output_bounds(engine::Engine& engine, int profile, bool first) {
  const int count = engine.io_count();
  std::vector<std::size_t> learned(bindings_, kUnbounded);
  auto keep = [&](const Status& status) {
    for (int o = 0; o < count; ++o) {
      if (engine.io(o).is_input) continue;
      std::size_t& known = max_bytes_[static_cast<std::size_t>(o)];
      const std::size_t now = learned[static_cast<std::size_t>(o)];
      known = first ? now : std::max(known, now);  // unknown (kUnbounded) stays unknown
    }
    return status;
  };
  for (int i = 0; i < count; ++i) {
    if (!engine.io(i).is_input) continue;
    const Status set = engine.set_input_shape(i, engine.input_bounds(profile, i).max);
    if (!set.ok()) return keep(set);
  }
  const Result<int> inferred = engine.infer_shapes();
  if (!inferred.ok()) return keep(inferred.status());
  for (int o = 0; o < count; ++o) {
    const engine::IoDesc& io = engine.io(o);
    if (io.is_input) continue;
    const Result<Shape> shape = engine.output_shape(o);
    if (!shape.ok()) continue;
    bool resolved = true;
    for (int d = 0; d < shape->rank; ++d) resolved = resolved && (*shape)[d] >= 0;
    if (resolved) learned[static_cast<std::size_t>(o)] = byte_size(*shape, io.dtype);
  }
  return keep(Status::Ok());
}

int StagingStore::choose_slot(cuda::StreamId stream, bool capturing) const noexcept {
  return staging::choose_slot(staged_before_, stream.same_as(slot_stream_), capturing, slot_, slots_);
}

void StagingStore::note_staged(int slot, cuda::StreamId stream) noexcept {
  slot_ = slot;
  slot_stream_ = stream;  // unknown for a capture: the next eager call moves on
  staged_before_ = true;
}

std::size_t StagingStore::capacity(int index, std::size_t held, std::size_t needed) const noexcept {
  const std::size_t largest = max_bytes_[static_cast<std::size_t>(index)];
  const std::size_t grown = std::max(needed, held + held / 2);  // by half at least: rare regrowth
  return std::max(needed, std::min(grown, largest));
}

Status StagingStore::grow_device(int slot, int index, std::size_t bytes, cudaStream_t stream, bool capturing,
                                 const char* name) {
  SharedBuffer& buffer = entries_[at(slot, index)].device;
  const std::size_t held = buffer ? buffer->size() : 0;
  if (held >= bytes) {
    if (buffer.use_count() == 1) buffer->set_stream(stream);  // a later free is ordered there
    return Status::Ok();
  }
  TRTET_CHECK_OR_RETURN(!capturing, kInvalidArgument,
                        "binding %d (\"%s\") needs %zu bytes of device staging but the session holds %zu, and nothing "
                        "may be allocated while the stream is being captured: run the call once before capturing",
                        index, name, bytes, held);
  TimedStep step("device staging growth");
  TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer grown, allocate_from(device_pool_, capacity(index, held, bytes), stream));
  if (buffer.use_count() == 1) {
    // Ours alone: freed on this call's stream once it is ordered after earlier calls.
    buffer->set_stream(stream);
    retired_.push_back(std::move(*buffer));
  } else if (buffer != nullptr) {
    release_shared(std::move(buffer), completion_->get());  // a captured graph still uses it
  }
  buffer = std::make_shared<cuda::DeviceBuffer>(std::move(grown));
  ++grows_;
  note_held();
  return Status::Ok();
}

Status StagingStore::grow_host(int index, std::size_t bytes, cudaStream_t stream) {
  Entry& staging = entries_[at(0, index)];
  staging.host.set_stream(stream);
  if (staging.host_size() >= bytes) return Status::Ok();
  // Pageable I/O is refused during capture before this point.
  const std::size_t grown_to = capacity(index, staging.host_size(), bytes);
  TimedStep step("host staging growth");
  if (host_pool_ != nullptr) {
    TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer grown, allocate_from(host_pool_, grown_to, stream));
    if (staging.host) retired_host_.push_back(std::move(staging.host));
    staging.host = std::move(grown);
  } else {
    TRTET_ASSIGN_OR_RETURN(cuda::PinnedBuffer grown, cuda::PinnedBuffer::allocate(grown_to));
    // cudaFreeHost may synchronize the device: outgrown buffers wait for release.
    if (staging.host_fallback) retired_pinned_.push_back(std::move(staging.host_fallback));
    staging.host_fallback = std::move(grown);
  }
  ++grows_;
  note_held();
  return Status::Ok();
}

void StagingStore::touch_host_staging() noexcept {
  for (std::size_t i = 0; i < bindings_; ++i) {
    const Entry& staging = entries_[i];  // slot 0
    if (staging.host_size() > 0) std::memset(staging.host_data(), 0, staging.host_size());
  }
}

Status StagingStore::ensure_chunk_events(std::size_t count) {
  if (chunk_events_.size() >= count) return Status::Ok();
  TimedStep step("chunk events");
  while (chunk_events_.size() < count) {
    TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
    chunk_events_.push_back(std::move(event));
  }
  return Status::Ok();
}

GraphHold StagingStore::graph_hold(int slot, const std::vector<bool>& staged) const {
  GraphHold hold;
  hold.device = device_;
  hold.events.push_back(completion_);
  hold.buffers.push_back(empty_tensor_);
  for (std::size_t i = 0; i < staged.size(); ++i) {
    if (staged[i]) hold.buffers.push_back(device_buffer(slot, static_cast<int>(i)));
  }
  return hold;
}

unsigned char* StagingStore::host_data(int index) const noexcept {
  return static_cast<unsigned char*>(entries_[at(0, index)].host_data());
}

Status StagingStore::ensure_empty_tensor(int index, const char* name, cudaStream_t stream, bool capturing) {
  if (empty_tensor_ != nullptr) return Status::Ok();
  TRTET_CHECK_OR_RETURN(!capturing, kInvalidArgument,
                        "binding %d (\"%s\") is empty, and the address the session binds empty tensors to is made "
                        "on first use, which nothing may do while the stream is being captured: run a call with an "
                        "empty tensor once before capturing",
                        index, name);
  TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer empty, allocate_from(device_pool_, kEmptyTensorBytes, stream));
  empty_tensor_ = std::make_shared<cuda::DeviceBuffer>(std::move(empty));
  note_held();
  return Status::Ok();
}

std::uint64_t StagingStore::held_bytes(bool host) const noexcept {
  std::uint64_t held = 0;
  if (host) {
    for (const Entry& staging : entries_) held += staging.host_size();
    for (const cuda::DeviceBuffer& buffer : retired_host_) held += buffer.size();
    for (const cuda::PinnedBuffer& buffer : retired_pinned_) held += buffer.size();
    return held;
  }
  // A buffer a captured graph shares is still the session's until it is released to the graph.
  for (const Entry& staging : entries_) held += staging.device != nullptr ? staging.device->size() : 0;
  for (const cuda::DeviceBuffer& buffer : retired_) held += buffer.size();
  held += empty_tensor_ != nullptr ? empty_tensor_->size() : 0;
  return held;
}

void StagingStore::note_held() noexcept {
  device_high_ = std::max(device_high_, held_bytes(false));
  host_high_ = std::max(host_high_, held_bytes(true));
}

StagingMemory StagingStore::memory() const {
  // What the session's allocations take now (Note [shared staging pools]: the pools are the
  // process's, so the session reserves nothing beyond them).
  StagingMemory memory;
  memory.device_used = memory.device_reserved = held_bytes(false);
  memory.device_used_high = memory.device_reserved_high = std::max(device_high_, memory.device_used);
  memory.host_used = memory.host_reserved = held_bytes(true);
  memory.host_used_high = memory.host_reserved_high = std::max(host_high_, memory.host_used);
  return memory;
}

Status StagingStore::trim() {
  TRTET_RETURN_IF_ERROR(trim_staging_pool(PoolKind::kDevice, device_));
  if (host_pool_ != nullptr) TRTET_RETURN_IF_ERROR(trim_staging_pool(PoolKind::kPinnedHost, device_));
  return Status::Ok();
}

Result<StagingReserve> staging_reserve(int device) {
  StagingReserve reserve;
  TRTET_ASSIGN_OR_RETURN(reserve.device, staging_pool_usage(PoolKind::kDevice, device));
  TRTET_ASSIGN_OR_RETURN(reserve.host, staging_pool_usage(PoolKind::kPinnedHost, device));
  return reserve;
}

Status trim_staging_reserve(int device) {
  TRTET_RETURN_IF_ERROR(trim_staging_pool(PoolKind::kDevice, device));
  return trim_staging_pool(PoolKind::kPinnedHost, device);
}

void StagingStore::release(cudaStream_t stream) noexcept {
  if (stream != nullptr) {
    // Every use is complete: free in order on `stream`, not a caller's (which may already be
    // destroyed). Buffers a live graph still holds go when it goes.
    auto free_shared = [&](SharedBuffer& buffer) {
      if (buffer == nullptr) return;
      if (buffer.use_count() == 1) {
        buffer->set_stream(stream);
        buffer->reset();
        buffer.reset();
      } else {
        release_shared(std::move(buffer), nullptr);
      }
    };
    for (Entry& staging : entries_) {
      free_shared(staging.device);
      staging.host.set_stream(stream);
      staging.host.reset();
      staging.host_fallback.reset();
    }
    for (cuda::DeviceBuffer& buffer : retired_) buffer.set_stream(stream);
    for (cuda::DeviceBuffer& buffer : retired_host_) buffer.set_stream(stream);
    retired_.clear();
    retired_host_.clear();
    retired_pinned_.clear();
    free_shared(empty_tensor_);
    // The frees complete now (our own stream only), so the next load reuses the memory at once
    // (Note [shared staging pools]). Memory a live graph still holds is freed when that graph goes.
    TRTET_CUDA_WARN(cudaStreamSynchronize(stream));
  }
  host_pool_ = nullptr;
  device_pool_ = nullptr;
  entries_.clear();
  max_bytes_.clear();
  chunk_events_.clear();
  completion_.reset();  // a graph that holds it keeps it
  slot_ = 0;
  slot_stream_ = cuda::StreamId();
  staged_before_ = false;
}

}  // namespace torch_tensorrt::executorch_backend::staging
