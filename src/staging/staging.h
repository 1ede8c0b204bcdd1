// The staging layer's interface to the session (docs/DESIGN.md, "Staging"): a session's staging
// memory (StagingStore: device and pinned host buffers for host I/O, per staging slot and binding,
// grown on demand or made within a budget at initialize, and the address bound to empty tensors),
// what the process's staging reserves, and the staging a captured graph holds. Pageable copies
// through pinned chunks: chunked_copy.h (included here). The rest of src/staging/ is internal: the
// arenas (arena.h, arena_book.h), the pools they fall back to (pool.h), the layout (layout.h) and
// the host copy workers (host_copy_pool.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"
#include "cuda/memory_pool.h"
#include "cuda/pinned_buffer.h"
#include "cuda/stream_id.h"
#include "engine/engine.h"
#include "staging/chunked_copy.h"

namespace torch_tensorrt::executorch_backend::staging {

class StagingPool;

// Graph holds (graph_hold.cpp): keeping what a captured CUDA graph uses alive for as long as the
// graph lives.
//
// A call recorded into the caller's capture leaves the graph pointing at session memory (device
// staging for pinned host I/O, the buffer bound to empty tensors) and at the session's completion
// event (see Note [ordering replays] in session/call_ordering.cpp). The graph may be replayed after a later
// eager call has outgrown that staging, or after the session is destroyed. So the session shares
// those objects with the graph: a CUDA user object, retained by the graph under capture, owns a
// second reference, and whichever owner lets go last frees them.
//
// The driver releases the user object on its own thread, where no CUDA call is allowed, once the
// graph and every launch of it are gone: the release only moves the references to a list that
// the next session call (any thread that may make CUDA calls) drains.
using SharedBuffer = std::shared_ptr<cuda::DeviceBuffer>;
using SharedEvent = std::shared_ptr<cuda::Event>;

/// What one captured call uses.
struct GraphHold {
  int device = 0;
  std::vector<SharedBuffer> buffers;
  std::vector<SharedEvent> events;
};

/// Makes the graph being captured on `stream` hold `hold` until the graph is destroyed.
Status retain_in_capture(cudaStream_t stream, GraphHold hold);

/// The session lets go of `buffer`, last used by work that `after` (recorded, on the buffer's
/// device, current) covers. Freed at once when no graph holds it, else once the last graph
/// holding it is gone; either way, in order after `after`. Never synchronizes.
void release_shared(SharedBuffer buffer, cudaEvent_t after) noexcept;

/// Frees what graphs that are gone held. Cheap when nothing is waiting; called on every execute.
void drain_released_graph_holds() noexcept;

/// What the store holds now: the sizes of its live allocations, device and pinned host, and their
/// high marks (SessionStats' memory fields). The process's pools are shared (Note [shared staging
/// pools] in staging/pool.cpp), so a session reserves nothing beyond its allocations: its
/// reserved fields equal its used ones, and the process's reserve is the pools' own counters
/// (staging_reserve()).
struct StagingMemory {
  std::uint64_t device_reserved = 0, device_used = 0, device_reserved_high = 0, device_used_high = 0;
  std::uint64_t host_reserved = 0, host_used = 0, host_reserved_high = 0, host_used_high = 0;
};

/// What the process's staging pools on `device` reserve and use, for every session together.
struct StagingReserve {
  cuda::PoolUsage device;
  cuda::PoolUsage host;
};
/// Read from the pools' counters; zeros for a pool not made yet.
Result<StagingReserve> staging_reserve(int device);
/// Gives back what the process's staging pools on `device` hold unused (off the hot path).
Status trim_staging_reserve(int device);

/// Owns the staging of one session. Device staging comes from the process's device staging pool and
/// is shared with graphs that captured it (graph_hold.h). Host staging (pageable I/O only, never
/// captured) comes from the process's pinned host staging pool, or, where the device has none, from
/// cudaHostAlloc; only the first slot's entries hold it (calls with pageable memory finish with it
/// before they release the session's lock). The store orders no work itself; its retire rule says
/// when outgrown staging is freed: by the call that outgrew it, once CallOrdering has ordered that
/// call after every earlier one (CallPlan::frees_staging, free_retired).
class StagingStore {
 public:
  /// A binding's largest size when it is not known: no cap.
  static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

  StagingStore() noexcept = default;
  StagingStore(const StagingStore&) = delete;             // owns memory
  StagingStore& operator=(const StagingStore&) = delete;

  /// Takes the pools for `engine`'s device and sizes the store for its bindings and `slots`
  /// slots. Inputs' largest sizes come from the profiles' bounds; outputs' are unknown until
  /// learn_output_bounds. `completion` (CallOrdering's) covers every call so far: staging a
  /// captured graph still holds is released after it.
  Status initialize(const engine::Engine& engine, int slots, SharedEvent completion);

  /// Makes staging within `budget` bytes on `stream` (Note [staging budget] in store.cpp),
  /// with the chunk events its largest pageable outputs need. Where the device reads host memory
  /// directly (`host_accessible`), nothing is made.
  Status prepare_budget(engine::Engine& engine, std::size_t budget, bool host_accessible, cudaStream_t stream);
  /// Raises each output's largest size to its size with every input at `profile`'s maximum
  /// (`profile` selected; `first`: replace rather than raise). Leaves those input shapes set.
  Status learn_output_bounds(engine::Engine& engine, int profile, bool first);

  /// The slot for a call that stages (layout.h, choose_slot).
  int choose_slot(cuda::StreamId stream, bool capturing) const noexcept;
  /// A call staged in `slot` on `stream` (unknown for a capture).
  void note_staged(int slot, cuda::StreamId stream) noexcept;

  /// Grows binding `index`'s device staging in `slot` to `bytes` at least, on `stream`. Outgrown
  /// staging is retired (freed by free_retired), or, where a captured graph holds it, released
  /// after the completion event. kInvalidArgument while capturing (`name`: the binding's, for the
  /// message).
  Status grow_device(int slot, int index, std::size_t bytes, cudaStream_t stream, bool capturing, const char* name);
  /// Grows binding `index`'s pinned host staging (not in use: its last call waited for it).
  Status grow_host(int index, std::size_t bytes, cudaStream_t stream);
  void* device_data(int slot, int index) const noexcept { return entry(slot, index).device->data(); }
  const SharedBuffer& device_buffer(int slot, int index) const noexcept { return entry(slot, index).device; }
  unsigned char* host_data(int index) const noexcept;
  /// Makes chunk events until there are `count`: one per chunk of a call's pageable outputs
  /// (chunked_copy.h), so each chunk is copied out as soon as it lands.
  Status ensure_chunk_events(std::size_t count);
  /// The chunk events, in the order a call's output chunks take them.
  cuda::Event* chunk_events() noexcept { return chunk_events_.data(); }

  /// Makes the address bound to empty tensors on first use; kInvalidArgument while capturing.
  Status ensure_empty_tensor(int index, const char* name, cudaStream_t stream, bool capturing);
  void* empty_tensor() const noexcept { return empty_tensor_->data(); }
  const SharedBuffer& empty_tensor_buffer() const noexcept { return empty_tensor_; }

  /// The retire rule's first half: outgrown staging waits to be freed, so the call orders itself
  /// after every earlier call (any of them may have used it; CallPlan::frees_staging).
  bool retiring() const noexcept { return !retired_.empty() || !retired_host_.empty(); }
  /// Its second half: once the call is ordered after every earlier one (`after_all`, CallOrder's),
  /// frees retired staging in stream order (each on the stream it was last used on).
  void free_retired(bool after_all) noexcept {
    if (!after_all) return;
    retired_.clear();
    retired_host_.clear();
  }
  /// What a graph capturing a call in `slot` uses of the staging: the slot's device staging of
  /// the bindings `staged` names (true: staged), the empty-tensor address, and the completion event.
  GraphHold graph_hold(int slot, const std::vector<bool>& staged) const;

  std::uint64_t grows() const noexcept { return grows_; }
  std::uint64_t budgeted_bytes() const noexcept { return budgeted_bytes_; }
  /// Writes every page of the pinned host staging prepare_budget made, once its allocations are
  /// complete (the caller synchronized their stream), so a first call does not meet the host's
  /// first touch of those pages (Note [staging budget]).
  void touch_host_staging() noexcept;
  StagingMemory memory() const;
  /// Gives the driver back what the process's pools hold but no staging uses (cudaMemPoolTrimTo).
  Status trim();
  /// Frees everything in order on `stream` (every use complete) and waits for `stream`, so the
  /// memory can be reused at once by the next load.
  void release(cudaStream_t stream) noexcept;

 private:
  struct Entry {
    SharedBuffer device;
    cuda::DeviceBuffer host;
    cuda::PinnedBuffer host_fallback;
    void* host_data() const noexcept { return host ? host.data() : host_fallback.data(); }
    std::size_t host_size() const noexcept { return host ? host.size() : host_fallback.size(); }
  };
  const Entry& entry(int slot, int index) const noexcept { return entries_[at(slot, index)]; }
  std::size_t at(int slot, int index) const noexcept {
    return static_cast<std::size_t>(slot) * bindings_ + static_cast<std::size_t>(index);
  }
  /// The capacity staging of binding `index` grows to from `held` for `needed` bytes: by half at
  /// least, but not past the binding's largest size when that is known.
  std::size_t capacity(int index, std::size_t held, std::size_t needed) const noexcept;
  /// The bytes of device (`host`: pinned host) staging the store holds now.
  std::uint64_t held_bytes(bool host) const noexcept;
  /// Raises the high marks to what is held now (after an allocation).
  void note_held() noexcept;

  std::size_t bindings_ = 0;
  int slots_ = 1;
  std::vector<Entry> entries_;                    ///< slots x bindings (at())
  std::vector<std::size_t> max_bytes_;            ///< per binding: its largest size over the profiles
  int device_ = 0;
  StagingPool* device_pool_ = nullptr;      ///< the process's: device staging and the empty-tensor address
  StagingPool* host_pool_ = nullptr;        ///< the process's: pinned host staging, stream-ordered (or none)
  std::vector<cuda::DeviceBuffer> retired_;       ///< outgrown device staging, freed once ordered after earlier calls
  std::vector<cuda::DeviceBuffer> retired_host_;  ///< outgrown pinned host staging, freed likewise
  std::vector<cuda::PinnedBuffer> retired_pinned_;///< outgrown cudaHostAlloc staging, freed at release
  SharedBuffer empty_tensor_;
  SharedEvent completion_;                        ///< CallOrdering's: covers every call so far
  std::vector<cuda::Event> chunk_events_;         ///< per chunk of a call's pageable outputs
  int slot_ = 0;                                  ///< the slot of the last call that staged (or 0)
  cuda::StreamId slot_stream_;                    ///< that call's stream (unknown: captured, or none)
  bool staged_before_ = false;
  std::uint64_t grows_ = 0;
  std::uint64_t budgeted_bytes_ = 0;
  std::uint64_t device_high_ = 0;                 ///< the most device staging held at once
  std::uint64_t host_high_ = 0;                   ///< the most pinned host staging held at once
};

}  // namespace torch_tensorrt::executorch_backend::staging
