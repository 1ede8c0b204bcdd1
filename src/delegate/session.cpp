#include "delegate/session.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/stream_facts.h"
#include "delegate/aliases.h"
#include "delegate/checks.h"
#include "delegate/staging_layout.h"
#include "green/current.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

/// Staging grows by at least half its size, so a slowly growing shape reallocates rarely.
std::size_t grown_capacity(std::size_t current, std::size_t needed) {
  return std::max(needed, current + current / 2);
}

/// max_bytes_ of a binding whose largest size is not known: no cap.
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

/// The device memory bound to empty tensors (a valid, aligned address; nothing is read or written).
constexpr std::size_t kEmptyTensorBytes = 256;

/// True when some profile lets input `index` be empty (a zero dimension in its minimum).
bool may_be_empty(const engine::Engine& engine, int index) {
  for (int p = 0; p < engine.profile_count(); ++p) {
    if (engine.input_bounds(p, index).min.numel() == 0) return true;
  }
  return false;
}

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;             // one push, one pop
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace

Session::Session(engine::EnginePtr engine, SessionOptions options) noexcept
    : engine_(std::move(engine)), options_(options), graphs_(options.graph_cache_size) {}

Session::~Session() { destroy(); }

Status Session::initialize() {
  std::lock_guard<std::mutex> lock(mutex_);
  TRTET_CHECK_OR_RETURN(engine_ != nullptr, kInvalidState, "session has no engine");
  TRTET_CHECK_OR_RETURN(!initialized_, kInvalidState, "session is already initialized");
  const engine::Engine& engine = *engine_;
  const int count = engine.io_count();
  TRTET_CHECK_OR_RETURN(count > 0, kInvalidProgram, "engine has no bindings");
  TRTET_CHECK_OR_RETURN(engine.profile_count() >= 1, kInvalidProgram, "engine has no optimization profile");
  TRTET_CHECK_OR_RETURN(options_.staging_slots >= 1 && options_.staging_slots <= 4, kInvalidArgument,
                        "staging_slots is %d; it must be 1 to 4", options_.staging_slots);
  for (int p = 0; p < engine.profile_count(); ++p) {
    for (int i = 0; i < count; ++i) {
      const engine::IoDesc& io = engine.io(i);
      if (!io.is_input) continue;
      const engine::ShapeBounds bounds = engine.input_bounds(p, i);
      TRTET_CHECK_OR_RETURN(bounds.min.rank == bounds.max.rank && bounds.min.rank == io.min_shape.rank, kInvalidProgram,
                            "input %d (\"%s\"): profile %d bounds %s and %s differ in rank (profile 0: rank %d)", i,
                            io.name.c_str(), p, bounds.min.to_string().c_str(), bounds.max.to_string().c_str(),
                            io.min_shape.rank);
      for (int d = 0; d < bounds.min.rank; ++d) {
        TRTET_CHECK_OR_RETURN(bounds.min[d] <= bounds.max[d], kInvalidProgram,
                              "input %d (\"%s\"): profile %d minimum %s exceeds maximum %s", i, io.name.c_str(), p,
                              bounds.min.to_string().c_str(), bounds.max.to_string().c_str());
      }
    }
  }
  // Aliases are checked once, here (Note [aliased outputs] in delegate/aliases.h).
  TRTET_ASSIGN_OR_RETURN(alias_input_of_output_, validate_aliases(*engine_));

  TRTET_RETURN_IF_ERROR(cuda::check_device_index(engine.device()));
  cuda::DeviceGuard device(engine.device());
  TRTET_RETURN_IF_ERROR(device.status());
  int integrated = 0;
  int ats = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, engine.device()));
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&ats, cudaDevAttrPageableMemoryAccessUsesHostPageTables, engine.device()));
  host_memory_is_device_accessible_ = integrated != 0 || ats != 0;

  TRTET_ASSIGN_OR_RETURN(join_in_, cuda::Event::create());
  slots_.clear();
  slots_.resize(static_cast<std::size_t>(options_.staging_slots));
  for (Slot& slot : slots_) {
    TRTET_ASSIGN_OR_RETURN(slot.engine_done, cuda::Event::create());
    TRTET_ASSIGN_OR_RETURN(slot.copies_done, cuda::Event::create());
  }
  TRTET_ASSIGN_OR_RETURN(cuda::Event completion, cuda::Event::create());
  completion_ = std::make_shared<cuda::Event>(std::move(completion));
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  TRTET_ASSIGN_OR_RETURN(own_stream_id_, cuda::stream_id(own_stream_));
  // The session's own pools, lent (Note [pools are recycled] in memory_pool.cpp): what it holds
  // beyond its engine is what they hold (stats()). Nothing is allocated here unless a staging
  // budget asks for it.
  TRTET_ASSIGN_OR_RETURN(device_pool_, cuda::LeasedPool::take(cuda::PoolKind::kDevice, engine.device()));
  auto pool = cuda::LeasedPool::take(cuda::PoolKind::kPinnedHost, engine.device());
  if (pool.ok()) {
    host_pool_ = std::move(pool).value();
  } else {
    log(LogLevel::kWarning, "host staging falls back to cudaHostAlloc, whose growth may synchronize the device: %s",
        pool.status().to_string().c_str());
  }

  profile_used_.assign(static_cast<std::size_t>(engine.profile_count()), false);
  profile_used_[0] = true;  // selected when the engine was made
  bindings_.assign(static_cast<std::size_t>(count), Binding{});
  staging_.clear();
  staging_.resize(static_cast<std::size_t>(count) * slots_.size());  // staging_index(slot, binding)
  // Inputs' largest sizes come from the profiles' bounds; outputs' from inference, with a budget.
  max_bytes_.assign(static_cast<std::size_t>(count), kUnbounded);
  for (int i = 0; i < count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    if (!io.is_input) continue;
    std::size_t largest = 0;
    for (int p = 0; p < engine.profile_count(); ++p) {
      largest = std::max(largest, byte_size(engine.input_bounds(p, i).max, io.dtype));  // kUnbounded on overflow
    }
    max_bytes_[static_cast<std::size_t>(i)] = largest;
  }
  if (options_.staging_budget_bytes > 0) {
    TRTET_RETURN_IF_ERROR(prepare_budgeted_staging());
    // Made in order on our own stream; a first call on another stream does not wait for it.
    TRTET_CUDA_CHECK(cudaStreamSynchronize(own_stream_));  // our own stream only
  }
  initialized_ = true;
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
// tensors where a profile allows an empty input.
Status Session::prepare_budgeted_staging() {
  const engine::Engine& engine = *engine_;
  const int count = engine.io_count();
  const Status learned = learn_output_bounds(0, /*first=*/true);
  if (!learned.ok()) log(LogLevel::kDebug, "output sizes at profile 0's maximum unknown: %s", learned.to_string().c_str());
  // Where the device reads host memory directly, nothing is ever staged.
  if (host_memory_is_device_accessible_) return Status::Ok();

  std::vector<bool> in_place(static_cast<std::size_t>(count), false);
  for (const engine::Alias& alias : engine.aliases()) {
    in_place[static_cast<std::size_t>(alias.output)] = true;
    in_place[static_cast<std::size_t>(alias.input)] = true;
  }
  const std::size_t budget = options_.staging_budget_bytes;
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
    Staging& staging = staging_[static_cast<std::size_t>(i)];
    TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer device,
                           cuda::DeviceBuffer::allocate_from(device_pool_.get(), bytes, own_stream_));
    staging.device = std::make_shared<cuda::DeviceBuffer>(std::move(device));
    if (host_pool_) {
      TRTET_ASSIGN_OR_RETURN(staging.host, cuda::DeviceBuffer::allocate_from(host_pool_.get(), bytes, own_stream_));
    } else {
      TRTET_ASSIGN_OR_RETURN(staging.host_fallback, cuda::PinnedBuffer::allocate(bytes));
    }
    total += 2 * bytes;
    const std::size_t chunk = chunk_bytes(bytes);
    if (!io.is_input) output_chunks += (bytes + chunk - 1) / chunk;
    chunked = chunked || bytes > chunk;
  }
  stats_.budgeted_staging_bytes = total;
  TRTET_RETURN_IF_ERROR(ensure_chunk_events(output_chunks));
  if (chunked) (void)HostCopyPool::shared().workers();  // starts the workers, once per process
  for (int i = 0; i < count; ++i) {
    if (engine.io(i).is_input && may_be_empty(engine, i)) {
      TRTET_RETURN_IF_ERROR(ensure_empty_tensor(i, own_stream_, /*capturing=*/false));
      break;
    }
  }
  return Status::Ok();
}

Status Session::learn_output_bounds(int profile, bool first) {
  engine::Engine& engine = *engine_;
  const int count = engine.io_count();
  std::vector<std::size_t> learned(static_cast<std::size_t>(count), kUnbounded);
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

Status Session::ensure_empty_tensor(int index, cudaStream_t stream, bool capturing) {
  if (empty_tensor_ != nullptr) return Status::Ok();
  TRTET_CHECK_OR_RETURN(!capturing, kInvalidArgument,
                        "binding %d (\"%s\") is empty, and the address the session binds empty tensors to is made "
                        "on first use, which nothing may do while the stream is being captured: run a call with an "
                        "empty tensor once before capturing",
                        index, engine_->io(index).name.c_str());
  TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer empty,
                         cuda::DeviceBuffer::allocate_from(device_pool_.get(), kEmptyTensorBytes, stream));
  empty_tensor_ = std::make_shared<cuda::DeviceBuffer>(std::move(empty));
  return Status::Ok();
}

Status Session::ensure_chunk_events(std::size_t count) {
  // One event per chunk of pageable output, so each chunk is copied out as soon as it lands.
  while (chunk_events_.size() < count) {
    TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
    chunk_events_.push_back(std::move(event));
  }
  return Status::Ok();
}

std::size_t Session::staging_capacity(int index, std::size_t held, std::size_t needed) const noexcept {
  const std::size_t largest = max_bytes_[static_cast<std::size_t>(index)];
  return std::max(needed, std::min(grown_capacity(held, needed), largest));
}

Status Session::execute(TensorView* args, std::size_t count) {
  // An engine (or a runtime's resize callback) that throws fails the call; enqueue records the
  // completion event for whatever it queued before the throw.
  return without_exceptions("execute", [&] { return execute_steps(args, count); });
}

Status Session::execute_steps(TensorView* args, std::size_t count) {
  TRTET_CHECK_OR_RETURN(!closing_.load(std::memory_order_acquire), kInvalidState,
                        "execute on a session that is being destroyed");
  NvtxRange range("trtet::execute");
  SharedEvent wait_unlocked;  // the call's own event, waited on once the lock is released
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TRTET_CHECK_OR_RETURN(initialized_ && engine_ != nullptr, kInvalidState,
                          "execute on a session that is not initialized or already destroyed");
    TRTET_CHECK_OR_RETURN(args != nullptr || count == 0, kInvalidArgument, "execute got a null argument array");
    cuda::DeviceGuard device(engine_->device());
    TRTET_RETURN_IF_ERROR(device.status());

    Call call;
    TRTET_RETURN_IF_ERROR(resolve_stream(call));
    // Frees of what released graphs held: never while this thread captures (in global capture mode
    // a cudaFreeAsync on any stream invalidates the capture).
    if (!call.facts.capturing) drain_released_graph_holds();
    if (repeats_last_call(args, count, call)) return repeat_call(call, wait_unlocked);
    repeat_.kept = false;  // kept again below only if this call can be repeated as it is
    TRTET_ASSIGN_OR_RETURN(call.profile, check_arguments(*engine_, args, count));
    TRTET_RETURN_IF_ERROR(classify_arguments(args, call));
    TRTET_RETURN_IF_ERROR(select_profile(call));
    TRTET_RETURN_IF_ERROR(resolve_shapes(args, call));
    TRTET_RETURN_IF_ERROR(prepare_staging(call));
    TRTET_RETURN_IF_ERROR(prepare_completion(call));
    TRTET_RETURN_IF_ERROR(bind_addresses());
    // Every check has passed: from here on the call queues work.
    TRTET_RETURN_IF_ERROR(enqueue(call));
    TRTET_RETURN_IF_ERROR(complete(call, wait_unlocked));
    remember_call(args, count, call);
  }
  // The lock is released: other threads queue their calls while this one waits for its own host
  // data. Nothing of the session is touched from here on (destroy() may run, and the ExecuTorch
  // adapter may then end the session's lifetime); the event is shared with this call.
  if (wait_unlocked != nullptr) return wait_unlocked->synchronize();
  return Status::Ok();
}

Status Session::resolve_stream(Call& call) {
  const std::optional<cudaStream_t> selected = caller_stream();
  call.facts.caller_selected = selected.has_value();
  call.caller = selected.value_or(fallback_stream());
  const bool default_handle = cuda::is_default_stream_handle(call.caller);
  if (default_handle) {
    // Work on a default stream cannot run while a green context is current, and must not escape it.
    TRTET_ASSIGN_OR_RETURN(const bool green_current, green::is_green_context_current());
    TRTET_RETURN_IF_ERROR(delegate::resolve_stream(selected, green_current).status());
    TRTET_CHECK_OR_RETURN(!(selected.has_value() && green_current), kInvalidArgument,
                          "a CUDA green context is current on this thread and the selected stream is a default "
                          "stream, which cannot run there: select a stream of that green context");
  }
  TRTET_ASSIGN_OR_RETURN(call.facts.capturing, cuda::stream_is_capturing(call.caller));
  if (default_handle) {
    // The engine never gets a default stream (TensorRT adds device-wide synchronization for one):
    // the call runs on the session's own stream, joined to the caller's by events.
    TRTET_CHECK_OR_RETURN(!call.facts.capturing, kNotSupported,
                          "the stream being captured is a default stream (legacy or per-thread); capture on a "
                          "stream you created and select it with a CudaStreamGuard");
    call.stream = own_stream_;
    call.joined = true;
    call.stream_id = own_stream_id_;
    call.green = nullptr;  // made on the device's primary context
    call.green_known = true;
  } else {
    call.stream = call.caller;
    int stream_device = -1;
    if (call.facts.capturing) {
      TRTET_ASSIGN_OR_RETURN(stream_device, cuda::stream_device(call.caller, /*capturing=*/true));
    } else {
      TRTET_ASSIGN_OR_RETURN(stream_device, stream_placement(call));
    }
    TRTET_CHECK_OR_RETURN(stream_device == engine_->device(), kInvalidArgument,
                          "the selected CUDA stream belongs to device %d, but the engine runs on device %d: select "
                          "a stream of device %d",
                          stream_device, engine_->device(), engine_->device());
  }
  TRTET_CHECK_OR_RETURN(!(call.facts.capturing && engine_->enqueue_is_synchronous()), kNotSupported,
                        "this engine enqueues synchronously (weight streaming is active) and cannot be captured "
                        "into a CUDA graph");
  return Status::Ok();
}

Result<int> Session::stream_placement(Call& call) {
  // Streams are told apart by id, not handle: a destroyed stream's handle comes back for a new one.
  // (Only eager calls need it; the query is not made on a capturing stream.)
  auto id = cuda::stream_id(call.stream);
  call.stream_id = id.ok() ? *id : 0;  // unknown: ordered as a different stream, and not cached
  const StreamPlacement* found = nullptr;
  if (call.stream_id != 0) {
    for (const StreamPlacement& placement : stream_placements_) {
      if (placement.id == call.stream_id) {
        found = &placement;
        break;
      }
    }
  }
  StreamPlacement made;
  if (found == nullptr) {
    made.id = call.stream_id;
    TRTET_ASSIGN_OR_RETURN(made.device, cuda::stream_device(call.stream, /*capturing=*/false));
    TRTET_ASSIGN_OR_RETURN(made.green, cuda::stream_green_context(call.stream));
    if (call.stream_id != 0) {
      stream_placements_[next_stream_placement_] = made;
      next_stream_placement_ = (next_stream_placement_ + 1) % stream_placements_.size();
    }
    found = &made;
  }
  call.green = found->green;
  call.green_known = true;
  return found->device;
}

Result<MemoryKind> Session::classify(const TensorView& view, bool capturing) {
  // A capture records addresses for good: ask the driver, not the cache, whose entry may predate a
  // free and a reuse of the address.
  MemoryKind kind = MemoryKind::kDevice;
  if (capturing) {
    TRTET_ASSIGN_OR_RETURN(kind, classify_pointer(view.data, engine_->device()));
  } else {
    TRTET_ASSIGN_OR_RETURN(kind, pointer_kinds_.classify(view.data, engine_->device()));
  }
  if (!is_device_accessible(kind) && host_memory_is_device_accessible_) kind = MemoryKind::kManaged;
  // A tensor its runtime says is on the GPU is bound as it is: its memory must be, or the engine
  // would write host memory through a device address.
  TRTET_CHECK_OR_RETURN(view.hint != MemoryHint::kDevice || is_device_accessible(kind), kInvalidArgument,
                        "a tensor the program places on the GPU holds %s memory at %p: pass device memory for it",
                        to_string(kind), view.data);
  return kind;
}

void Session::mark_host(int index, Call& call) {
  const Binding& binding = bindings_[static_cast<std::size_t>(index)];
  if (is_device_accessible(binding.kind)) return;
  (engine_->io(index).is_input ? call.facts.host_inputs : call.facts.host_outputs) = true;
  if (binding.kind == MemoryKind::kPageableHost) call.facts.pageable = true;
}

Status Session::classify_arguments(TensorView* args, Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    Binding& binding = bindings_[static_cast<std::size_t>(i)];
    binding = Binding{};
    if (!engine_->io(i).is_input) continue;
    binding.user = args[i].data;
    if (args[i].data == nullptr) continue;  // an empty tensor
    TRTET_ASSIGN_OR_RETURN(binding.kind, classify(args[i], call.facts.capturing));
    mark_host(i, call);
  }
  for (int o = 0; o < count; ++o) {
    const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
    if (input < 0) continue;
    const Binding& source = bindings_[static_cast<std::size_t>(input)];
    TRTET_CHECK_OR_RETURN(source.user != nullptr && is_device_accessible(source.kind), kInvalidArgument,
                          "output %d (\"%s\") is updated in place in input %d (\"%s\"), which must be device-resident "
                          "but is in %s memory",
                          o, engine_->io(o).name.c_str(), input, engine_->io(input).name.c_str(),
                          source.user == nullptr ? "no" : to_string(source.kind));
  }
  return Status::Ok();
}

Status Session::select_profile(const Call& call) {
  if (call.profile == active_profile_) return Status::Ok();
  TRTET_CHECK_OR_RETURN(!(call.facts.capturing && !profile_used_[static_cast<std::size_t>(call.profile)]),
                        kInvalidArgument,
                        "the input shapes need optimization profile %d, which this engine has not used yet, and its "
                        "first use may allocate, which nothing may do while the stream is being captured: run the "
                        "call once before capturing",
                        call.profile);
  TRTET_RETURN_IF_ERROR(engine_->select_profile(call.profile, call.stream));
  const bool first_use = !profile_used_[static_cast<std::size_t>(call.profile)];
  active_profile_ = call.profile;
  profile_used_[static_cast<std::size_t>(call.profile)] = true;
  ++stats_.profile_switches;
  if (first_use && options_.staging_budget_bytes > 0) {
    // This profile's output sizes, now that it is selected (Note [staging budget]).
    const Status learned = learn_output_bounds(call.profile, /*first=*/false);
    if (!learned.ok()) log(LogLevel::kDebug, "output sizes at profile %d's maximum unknown: %s", call.profile,
                           learned.to_string().c_str());
  }
  return Status::Ok();
}

Status Session::resolve_shapes(TensorView* args, Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    if (!engine_->io(i).is_input) continue;
    TRTET_RETURN_IF_ERROR(engine_->set_input_shape(i, args[i].shape));
    bindings_[static_cast<std::size_t>(i)].shape = args[i].shape;
    bindings_[static_cast<std::size_t>(i)].bytes = byte_size(args[i].shape, args[i].dtype);  // checked: no overflow
  }
  TRTET_ASSIGN_OR_RETURN(const int unresolved, engine_->infer_shapes());
  TRTET_CHECK_OR_RETURN(unresolved == 0, kNotSupported,
                        "%d output shape(s) depend on data and stay unresolved after shape inference", unresolved);
  for (int o = 0; o < count; ++o) {
    const engine::IoDesc& io = engine_->io(o);
    if (io.is_input) continue;
    TensorView& view = args[o];
    Binding& binding = bindings_[static_cast<std::size_t>(o)];
    TRTET_ASSIGN_OR_RETURN(Shape shape, engine_->output_shape(o));
    // A 0-d output is accepted where the engine reports [1] (TensorRT has no 0-d outputs).
    if (view.shape.rank == 0 && shape.rank == 1 && shape[0] == 1) shape = view.shape;
    if (view.shape != shape) {
      TRTET_CHECK_OR_RETURN(view.resize != nullptr, kInvalidArgument,
                            "output %d (\"%s\") has shape %s, the engine produces %s, and the runtime cannot resize it",
                            o, io.name.c_str(), view.shape.to_string().c_str(), shape.to_string().c_str());
      TRTET_RETURN_IF_ERROR(view.resize(view.context, view, shape));
      TRTET_CHECK_OR_RETURN(view.shape == shape, kInternal, "output %d (\"%s\") was resized to %s, not %s", o,
                            io.name.c_str(), view.shape.to_string().c_str(), shape.to_string().c_str());
    }
    TRTET_ASSIGN_OR_RETURN(binding.bytes, checked_byte_size(shape, io.dtype, "output", o, io.name));
    const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
    if (input >= 0) {
      // Written in place into the input's (device-resident) memory: only if it fits there.
      TRTET_RETURN_IF_ERROR(check_alias_fits(*engine_, o, input, binding.bytes, args[input].capacity_bytes));
      const Binding& source = bindings_[static_cast<std::size_t>(input)];
      if (view.data != source.user) {
        TRTET_CHECK_OR_RETURN(view.set_data != nullptr, kInvalidArgument,
                              "output %d (\"%s\") aliases input %d, but the runtime cannot point it at the input's memory",
                              o, io.name.c_str(), input);
        TRTET_RETURN_IF_ERROR(view.set_data(view.context, view, source.user));
      }
      binding.kind = source.kind;
      binding.user = source.user;
      continue;
    }
    TRTET_CHECK_OR_RETURN(view.capacity_bytes >= binding.bytes, kInvalidArgument,
                          "output %d (\"%s\") holds %zu bytes, shape %s of %s needs %zu", o, io.name.c_str(),
                          view.capacity_bytes, shape.to_string().c_str(), to_string(io.dtype), binding.bytes);
    binding.user = view.data;
    if (binding.bytes == 0) continue;
    TRTET_CHECK_OR_RETURN(view.data != nullptr, kInvalidArgument, "output %d (\"%s\") has no data pointer", o,
                          io.name.c_str());
    // Classified only now: the runtime may have placed the output in its resize.
    TRTET_ASSIGN_OR_RETURN(binding.kind, classify(view, call.facts.capturing));
    TRTET_CHECK_OR_RETURN(!(call.facts.capturing && binding.kind == MemoryKind::kPageableHost), kInvalidArgument,
                          "output %d (\"%s\") is in pageable host memory, which cannot be used while the stream is "
                          "being captured; use device or pinned host memory",
                          o, io.name.c_str());
    mark_host(o, call);
  }
  TRTET_ASSIGN_OR_RETURN(call.completion, decide_completion(call.facts));
  return Status::Ok();
}

Status Session::prepare_staging(Call& call) {
  const int count = engine_->io_count();
  // A call on the stream of the last call that staged keeps its slot: the stream orders them. A
  // call on another stream takes the next slot (Note [pipelined calls]). Kept only if something
  // is staged (below).
  // A capture takes the slot of the last call that staged, which a warm-up call has sized (it
  // cannot allocate, and waits for every earlier call anyway).
  const bool same_stream = call.stream_id != 0 && call.stream_id == slot_stream_id_;
  call.slot = choose_slot(staged_before_, same_stream, call.facts.capturing, slot_, static_cast<int>(slots_.size()));
  for (int i = 0; i < count; ++i) {
    Binding& binding = bindings_[static_cast<std::size_t>(i)];
    if (binding.bytes == 0) {
      TRTET_RETURN_IF_ERROR(ensure_empty_tensor(i, call.stream, call.facts.capturing));
      binding.address = empty_tensor_->data();
      continue;
    }
    if (is_device_accessible(binding.kind)) {
      binding.address = binding.user;
      continue;
    }
    TRTET_RETURN_IF_ERROR(grow_device_staging(i, binding.bytes, call));
    binding.address = staging_[staging_index(call.slot, i)].device->data();
    binding.staged = true;
    (engine_->io(i).is_input ? call.staged_inputs : call.staged_outputs) = true;
    if (binding.kind != MemoryKind::kPageableHost) continue;
    TRTET_RETURN_IF_ERROR(grow_host_staging(i, binding.bytes, call));
    if (!engine_->io(i).is_input) {
      const std::size_t chunk = chunk_bytes(binding.bytes);
      call.output_chunks += (binding.bytes + chunk - 1) / chunk;
    }
  }
  TRTET_RETURN_IF_ERROR(ensure_chunk_events(call.output_chunks));
  if (call.staged_inputs || call.staged_outputs) {
    slot_ = call.slot;
    slot_stream_id_ = call.stream_id;  // 0 for a capture: the next eager call moves on
    staged_before_ = true;
  } else {
    call.slot = -1;
  }
  return Status::Ok();
}

Status Session::prepare_completion(Call& call) {
  if (call.completion == Completion::kReturnAtOnce) return Status::Ok();
  // A pooled event no waiting caller holds any more, else a new one (the pool grows to the number
  // of callers waiting at once). A count of 1 is final: references are only taken under the lock.
  for (const SharedEvent& event : call_events_) {
    if (event.use_count() == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);  // after the last waiter let go
      call.done = event;
      return Status::Ok();
    }
  }
  TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
  call_events_.push_back(std::make_shared<cuda::Event>(std::move(event)));
  call.done = call_events_.back();
  return Status::Ok();
}

Status Session::grow_device_staging(int index, std::size_t bytes, const Call& call) {
  SharedBuffer& buffer = staging_[staging_index(call.slot, index)].device;
  const std::size_t held = buffer ? buffer->size() : 0;
  if (held >= bytes) {
    if (buffer.use_count() == 1) buffer->set_stream(call.stream);  // a later free is ordered there
    return Status::Ok();
  }
  TRTET_CHECK_OR_RETURN(!call.facts.capturing, kInvalidArgument,
                        "binding %d (\"%s\") needs %zu bytes of device staging but the session holds %zu, and nothing "
                        "may be allocated while the stream is being captured: run the call once before capturing",
                        index, engine_->io(index).name.c_str(), bytes, held);
  TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer grown,
                         cuda::DeviceBuffer::allocate_from(device_pool_.get(), staging_capacity(index, held, bytes),
                                                           call.stream));
  if (buffer.use_count() == 1) {
    // Ours alone: freed on this call's stream once it is ordered after earlier calls.
    buffer->set_stream(call.stream);
    retired_.push_back(std::move(*buffer));
  } else if (buffer != nullptr) {
    release_shared(std::move(buffer), completion_->get());  // a captured graph still uses it
  }
  buffer = std::make_shared<cuda::DeviceBuffer>(std::move(grown));
  ++stats_.staging_grows;
  return Status::Ok();
}

Status Session::grow_host_staging(int index, std::size_t bytes, const Call& call) {
  Staging& staging = staging_[static_cast<std::size_t>(index)];
  staging.host.set_stream(call.stream);
  if (staging.host_size() >= bytes) return Status::Ok();
  // Pageable I/O is refused during capture before this point.
  const std::size_t capacity = staging_capacity(index, staging.host_size(), bytes);
  // Not in use on the host: the call that used it waited for its host data before returning.
  if (host_pool_) {
    TRTET_ASSIGN_OR_RETURN(cuda::DeviceBuffer grown,
                           cuda::DeviceBuffer::allocate_from(host_pool_.get(), capacity, call.stream));
    if (staging.host) retired_.push_back(std::move(staging.host));
    staging.host = std::move(grown);
  } else {
    TRTET_ASSIGN_OR_RETURN(cuda::PinnedBuffer grown, cuda::PinnedBuffer::allocate(capacity));
    // cudaFreeHost may synchronize the device: outgrown buffers wait for destroy.
    if (staging.host_fallback) retired_pinned_.push_back(std::move(staging.host_fallback));
    staging.host_fallback = std::move(grown);
  }
  ++stats_.staging_grows;
  return Status::Ok();
}

Status Session::bind_addresses() {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    TRTET_RETURN_IF_ERROR(engine_->set_tensor_address(i, bindings_[static_cast<std::size_t>(i)].address));
  }
  return Status::Ok();
}

// Note [ordering replays]: every eager call records completion_ after its work; a call recorded
// into a capture waits on completion_ and records it again through external event nodes, so each
// replay of the graph is ordered after the eager calls launched before it, and eager calls after
// a replay wait for it like for any earlier call. Once a graph may replay, eager calls always wait.
//
// Note [pipelined calls]
// ----------------------
// A call with host I/O returns only once its host outputs are written (or its host inputs read),
// so one thread's calls cannot overlap. Several threads, each on a stream of its own, can: call
// i+1's host-to-device copies may run under call i's engine, and call i's device-to-host copies
// under call i+1's engine. Three things stood in the way, and each is now as narrow as the hazard
// it guards against:
//
//  - The wait for the call's own completion happened under the session's lock, so the next thread
//    could not even queue its call. Now it happens after the lock is released (execute_steps), on
//    an event of the call's own (call_events_, a pool), shared with the waiting thread, so destroy()
//    cannot free it under the thread; the thread touches nothing of the session after the lock.
//    Calls with pageable memory still wait under the lock: their data goes through the session's
//    host staging, which the next such call's host-side memcpy reuses and which nothing on the GPU
//    orders (and copy_out_pageable_outputs works on the session's chunk lists).
//  - A call on another stream waited on the GPU for the whole previous call, its device-to-host
//    copies included. Now its steps wait only for what they reuse. The engine waits for the
//    previous engine (one execution context cannot run two enqueues at once, and an engine may read
//    what the previous one wrote, an in-place update say): the engine_done event of that call's
//    slot, or completion_ where it staged nothing (nothing of it follows the engine then; the join
//    below may make that wait a little longer than needed, never shorter). Staging comes in slots
//    (SessionOptions::staging_slots; staging_index): a call that stages on another stream than the last call that
//    staged takes the next slot, and one on the same stream keeps that call's slot, which the
//    stream already orders (so a session used from one stream holds one slot's staging, which a
//    staging budget makes at initialize; the next slot grows when calls first come from two
//    streams). The host-to-device copies into a slot wait for the engine of the slot's last user (which read that input staging), and
//    the engine waits for the last user's device-to-host copies (which read the output staging it
//    will write). Even with two slots, call i+1's copies in only wait for call i-1's engine, which
//    is done before call i's engine starts, and call i+1's engine only for call i-1's copies out,
//    which ran under call i's engine: the bound is the longest of copy in, engine and copy out.
//    The default of three gives each of those waits a call's slack (P3h measured the difference).
//  - completion_ must still cover every earlier call: destroy(), captures and the whole-call waits
//    below wait on it alone. So before an eager call records it on a stream other than the previous
//    call's, that stream waits on completion_ as it was (join_earlier_calls): a join on the GPU, at
//    the end of the call, which delays nothing of the call itself, only the record and the
//    caller's later work on that stream (which follows every earlier call, as it did before). The
//    call's own event, which its caller waits on, is recorded before the join.
//
// Calls on the stream of the previous call need no wait at all: that stream already follows every
// earlier call (the join). The whole-call ordering of before is kept where pipelining would need
// more bookkeeping than it is worth: a capture waits on completion_ (Note [ordering replays]), and
// once a graph may replay (captured_) every eager call does, because a replay, launched on any
// stream, records only completion_; and a call that frees outgrown staging (retired_) waits for
// every earlier call first, since any of them may have used it. Calls with no guard run on the
// session's own stream and so stay in order among themselves.
Status Session::order_after_previous_calls(Call& call) {
  if (call.facts.capturing) {
    if (completion_pending_ || captured_) {
      TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, completion_->get(), cudaEventWaitExternal));
    }
    call.after_all = true;
    return Status::Ok();
  }
  const bool same_stream = call.stream_id != 0 && call.stream_id == last_stream_id_;
  if (!captured_ && (!completion_pending_ || same_stream)) {
    call.after_all = true;  // nothing earlier, or all of it is ahead on this stream
    return Status::Ok();
  }
  if (captured_ || !retired_.empty()) {
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, completion_->get(), 0));
    call.after_all = true;
    call.cross_stream = !same_stream;
    ++stats_.whole_call_waits;
  }
  return Status::Ok();  // else pipelined: order_staging_writes and order_engine wait for what they reuse
}

Status Session::order_staging_writes(Call& call) {
  if (call.after_all || call.slot < 0 || !call.staged_inputs) return Status::Ok();
  const Slot& slot = slots_[static_cast<std::size_t>(call.slot)];
  if (!slot.engine_recorded || (call.stream_id != 0 && slot.engine_stream_id == call.stream_id)) return Status::Ok();
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, slot.engine_done.get(), 0));
  call.cross_stream = true;
  return Status::Ok();
}

Status Session::order_engine(Call& call) {
  if (call.after_all) return Status::Ok();
  if (engine_pending_ && !(call.stream_id != 0 && engine_stream_id_ == call.stream_id)) {
    const cudaEvent_t engine_done =
        engine_slot_ >= 0 ? slots_[static_cast<std::size_t>(engine_slot_)].engine_done.get() : completion_->get();
    TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, engine_done, 0));
    call.cross_stream = true;
  }
  if (call.slot < 0 || !call.staged_outputs) return Status::Ok();
  const Slot& slot = slots_[static_cast<std::size_t>(call.slot)];
  if (!slot.copies_recorded || (call.stream_id != 0 && slot.copies_stream_id == call.stream_id)) return Status::Ok();
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, slot.copies_done.get(), 0));
  call.cross_stream = true;
  return Status::Ok();
}

Status Session::record_progress(Call& call, bool engine_done, bool copies_done) {
  // Inside a capture nothing runs now: later eager calls wait on completion_ instead (captured_).
  if (call.facts.capturing) return Status::Ok();
  Slot* slot = call.slot >= 0 ? &slots_[static_cast<std::size_t>(call.slot)] : nullptr;
  if (engine_done) {
    if (slot != nullptr) {
      TRTET_RETURN_IF_ERROR(slot->engine_done.record(call.stream));
      slot->engine_recorded = true;
      slot->engine_stream_id = call.stream_id;
    }
    engine_slot_ = call.slot;  // -1: completion_, recorded at the end of this call, marks it
    engine_pending_ = true;
    engine_stream_id_ = call.stream_id;
  }
  if (copies_done && slot != nullptr && call.staged_outputs) {
    TRTET_RETURN_IF_ERROR(slot->copies_done.record(call.stream));
    slot->copies_recorded = true;
    slot->copies_stream_id = call.stream_id;
  }
  return Status::Ok();
}

Status Session::join_earlier_calls(Call& call) {
  if (call.after_all || !completion_pending_ || (call.stream_id != 0 && call.stream_id == last_stream_id_)) {
    return Status::Ok();
  }
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, completion_->get(), 0));
  return Status::Ok();
}

Status Session::enqueue(Call& call) {
  Status queued = without_exceptions("the engine", [&]() -> Status {
    if (call.joined) {
      TRTET_RETURN_IF_ERROR(join_in_.record(call.caller));
      TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, join_in_.get(), 0));
    }
    TRTET_RETURN_IF_ERROR(order_after_previous_calls(call));
    retired_.clear();  // outgrown staging: freed in order after every earlier use (waited for above)
    TRTET_RETURN_IF_ERROR(order_staging_writes(call));
    TRTET_RETURN_IF_ERROR(copy_inputs_in(call));
    if (call.completion == Completion::kWaitInputsConsumed) TRTET_RETURN_IF_ERROR(call.done->record(call.stream));
    TRTET_RETURN_IF_ERROR(order_engine(call));
    TRTET_RETURN_IF_ERROR(run_engine(call));
    TRTET_RETURN_IF_ERROR(record_progress(call, /*engine_done=*/true, /*copies_done=*/false));
    TRTET_RETURN_IF_ERROR(copy_outputs_out(call));
    TRTET_RETURN_IF_ERROR(record_progress(call, /*engine_done=*/false, /*copies_done=*/true));
    if (call.completion == Completion::kWaitOutputsReady) TRTET_RETURN_IF_ERROR(call.done->record(call.stream));
    return Status::Ok();
  });
  if (call.cross_stream) ++stats_.cross_stream_waits;
  // Whatever was queued, completion_ covers it, so later calls and destroy wait for it.
  Status recorded;
  if (call.facts.capturing) {
    const cudaError_t error = cudaEventRecordWithFlags(completion_->get(), call.stream, cudaEventRecordExternal);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaEventRecordWithFlags", __FILE__, __LINE__);
    if (queued.ok() && recorded.ok()) queued = retain_for_graph(call);
  } else {
    // A call that failed part-way: the engine and slot events, too, cover what it queued.
    if (!queued.ok()) recorded = record_progress(call, /*engine_done=*/true, /*copies_done=*/true);
    if (recorded.ok()) recorded = join_earlier_calls(call);
    if (recorded.ok()) recorded = completion_->record(call.stream);
    if (recorded.ok()) {
      completion_pending_ = true;
      last_stream_id_ = call.stream_id;
    }
  }
  if (call.joined && recorded.ok()) {
    // The caller's stream continues after this call: once completion_ fires, nothing of it is left.
    const cudaError_t error = cudaStreamWaitEvent(call.caller, completion_->get(), 0);
    if (error != cudaSuccess) recorded = cuda::runtime_status(error, "cudaStreamWaitEvent", __FILE__, __LINE__);
  }
  TRTET_RETURN_IF_ERROR(queued);
  return recorded;
}

Result<cudaStream_t> Session::hand_over_aux_streams(CUgreenCtx green) {
  // Made on the stream's green context (or device), and handed over before every enqueue:
  // TensorRT applies setAuxStreams to the next enqueueV3 only.
  const int wanted = engine_->aux_stream_count();
  const int extra = options_.use_cuda_graphs ? 1 : 0;
  if (wanted + extra == 0) return cudaStream_t{nullptr};
  TRTET_ASSIGN_OR_RETURN(cudaStream_t* streams, aux_streams_.get(green, wanted + extra));
  if (wanted > 0) TRTET_RETURN_IF_ERROR(engine_->set_aux_streams(streams, wanted));
  return extra > 0 ? streams[wanted] : nullptr;
}

Status Session::run_engine(Call& call) {
  const bool graphs = options_.use_cuda_graphs && !call.facts.capturing && !engine_->enqueue_is_synchronous();
  if (!graphs && engine_->aux_stream_count() == 0) {
    call.enqueued_plainly = true;
    return engine_->enqueue(call.stream);
  }
  CUgreenCtx green = call.green;
  if (!call.green_known) {
    TRTET_ASSIGN_OR_RETURN(green, cuda::stream_green_context(call.stream));
  }
  TRTET_ASSIGN_OR_RETURN(cudaStream_t capture_stream, hand_over_aux_streams(green));
  if (!graphs) return engine_->enqueue(call.stream);

  GraphKey& key = graph_key_;
  key.profile = call.profile;
  key.green = green;
  key.dims.clear();
  key.addresses.clear();
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const Binding& binding = bindings_[static_cast<std::size_t>(i)];
    key.addresses.push_back(binding.address);
    if (!engine_->io(i).is_input) continue;
    key.dims.push_back(binding.shape.rank);
    for (int d = 0; d < binding.shape.rank; ++d) key.dims.push_back(binding.shape[d]);
  }
  GraphCache::Entry* entry = graphs_.find(key);
  if (entry == nullptr) {
    // First sight: eager (TensorRT may do one-time work in a shape's first enqueue); captured next time.
    graphs_.insert(key);
    return engine_->enqueue(call.stream);
  }
  if (entry->exec == nullptr) {
    const Status captured = capture_graph(call, capture_stream, entry->exec);
    if (!captured.ok()) {
      // An engine that cannot be captured still runs: eagerly, from now on.
      log(LogLevel::kWarning, "CUDA graphs turned off for this engine, whose enqueue could not be captured: %s",
          captured.to_string().c_str());
      options_.use_cuda_graphs = false;
      graphs_.clear();
      return engine_->enqueue(call.stream);
    }
    ++stats_.graph_captures;
  }
  TRTET_CUDA_CHECK(cudaGraphLaunch(entry->exec, call.stream));
  call.replayed = entry->exec;
  ++stats_.graph_launches;
  return Status::Ok();
}

// Note [repeated calls]
// ---------------------
// An application that runs one model over and over calls it with the same tensors (ExecuTorch's
// planned memory keeps their addresses) on the same stream. Each such call comes to one graph
// launch (graph mode) or one enqueue of the engine (eager), and the rest of the call (checking the
// arguments against the engine, classifying their memory, setting shapes and addresses on the
// engine, building the graph key and finding it) would come out the same every time: for a call
// with every tensor in device-accessible memory, on the stream of the previous call, with nothing
// ordered across streams, every step is a function of the arguments, the engine's state and the
// session's state, and none of those changed since. So the call is kept (remember_call), and the
// next call whose arguments match it field by field (address, capacity, shape, type, memory hint),
// on the same stream, queues its work again at once (repeat_call): the graph launch, or the
// engine's enqueue with the shapes and addresses the engine still holds, then completion_, as the
// full path would queue them.
//
// Whatever could make the full path differ ends the repeat: any other call (its first step drops
// the kept call), a capture on the stream (the check comes after resolve_stream, and a capturing
// call is never kept), a caller's capture of an earlier call (captured_: eager calls then wait on
// completion_), release_unused_memory and destroy (graphs and staging may go). Only device-
// accessible arguments qualify, so no staging, host copy or wait for host data is skipped. An
// eager call is kept only where the engine was enqueued plainly: not the eager first sight of a
// shape in graph mode (the next call captures), not an engine with auxiliary streams (they are
// handed over before every enqueue). While a call is kept, it was the last call (any other drops
// it first), so captured_ is still false and last_stream_id_, engine_stream_id_ and the engine's
// bindings are its own: the call's own stream and capture state are all there is to check.
bool Session::repeats_last_call(const TensorView* args, std::size_t count, const Call& call) const noexcept {
  if (!repeat_.kept || call.facts.capturing || call.stream_id != repeat_.stream_id) return false;
  if (args == nullptr || count != repeat_.args.size()) return false;
  for (std::size_t i = 0; i < count; ++i) {
    const TensorView& now = args[i];
    const TensorView& then = repeat_.args[i];
    if (now.data != then.data || now.capacity_bytes != then.capacity_bytes || now.dtype != then.dtype ||
        now.hint != then.hint || now.shape != then.shape) {
      return false;
    }
  }
  return true;
}

Status Session::repeat_call(Call& call, SharedEvent& wait_unlocked) {
  repeat_.kept = false;  // kept again once the work and its record are queued
  const Status queued = without_exceptions("the engine", [&]() -> Status {
    if (repeat_.exec == nullptr) return engine_->enqueue(call.stream);
    TRTET_CUDA_CHECK(cudaGraphLaunch(repeat_.exec, call.stream));
    return Status::Ok();
  });
  // As enqueue leaves a call that queued no host data: completion_ covers whatever was queued.
  TRTET_RETURN_IF_ERROR(completion_->record(call.stream));
  completion_pending_ = true;
  TRTET_RETURN_IF_ERROR(queued);
  if (repeat_.exec != nullptr) {
    ++stats_.graph_launches;
    ++stats_.repeated_replays;
  } else {
    ++stats_.repeated_enqueues;
  }
  repeat_.kept = true;
  call.profile = repeat_.profile;  // call.completion is kReturnAtOnce: nothing to wait for
  return complete(call, wait_unlocked);
}

void Session::remember_call(const TensorView* args, std::size_t count, const Call& call) {
  // A launched graph or a plain enqueue means the call was not capturing; returning at once means
  // nothing of it is in host memory (so nothing was staged); a stream of the caller's (not joined)
  // has a known id.
  const bool repeatable = (call.replayed != nullptr || call.enqueued_plainly) && !call.facts.capturing &&
                          !call.joined && call.stream_id != 0 && call.completion == Completion::kReturnAtOnce &&
                          !call.cross_stream && !captured_;
  if (!repeatable) return;
  repeat_.args.assign(args, args + count);
  repeat_.stream_id = call.stream_id;
  repeat_.exec = call.replayed;
  repeat_.profile = call.profile;
  repeat_.kept = true;
}

Status Session::capture_graph(const Call& call, cudaStream_t capture_stream, cudaGraphExec_t& exec) {
  (void)call;
  // Captured on a private stream of the call's green context (thread-local mode: other threads'
  // CUDA calls are not affected); nothing runs while capturing.
  TRTET_CUDA_CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal));
  const Status enqueued = engine_->enqueue(capture_stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_stream, &graph);
  if (!enqueued.ok() || ended != cudaSuccess) {
    if (graph != nullptr) TRTET_CUDA_WARN(cudaGraphDestroy(graph));
    (void)cudaGetLastError();
    TRTET_RETURN_IF_ERROR(enqueued);
    return cuda::runtime_status(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  TRTET_CUDA_WARN(cudaGraphDestroy(graph));
  if (instantiated != cudaSuccess) {
    exec = nullptr;
    (void)cudaGetLastError();
    return cuda::runtime_status(instantiated, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  return Status::Ok();
}

Status Session::retain_for_graph(const Call& call) {
  GraphHold hold;
  hold.device = engine_->device();
  hold.events.push_back(completion_);
  hold.buffers.push_back(empty_tensor_);
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    if (bindings_[static_cast<std::size_t>(i)].staged) hold.buffers.push_back(staging_[staging_index(call.slot, i)].device);
  }
  TRTET_RETURN_IF_ERROR(retain_in_capture(call.stream, std::move(hold)));
  captured_ = true;
  ++stats_.captures;
  return Status::Ok();
}

Status Session::copy_inputs_in(const Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const Binding& binding = bindings_[static_cast<std::size_t>(i)];
    if (!engine_->io(i).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(stage_pageable_input(i, call));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(binding.address, binding.user, binding.bytes, cudaMemcpyHostToDevice, call.stream));
    }
  }
  return Status::Ok();
}

Status Session::copy_outputs_out(const Call& call) {
  output_copies_.clear();
  output_chunk_ends_.clear();
  const int count = engine_->io_count();
  for (int o = 0; o < count; ++o) {
    const Binding& binding = bindings_[static_cast<std::size_t>(o)];
    if (engine_->io(o).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(queue_pageable_output(o, call));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(binding.user, binding.address, binding.bytes, cudaMemcpyDeviceToHost, call.stream));
    }
  }
  return Status::Ok();
}

Status Session::complete(Call& call, SharedEvent& wait_unlocked) {
  if (call.completion != Completion::kReturnAtOnce) {
    if (call.facts.pageable) {
      // Pageable I/O is done with the session's host staging only once this wait is over, so it
      // waits under the lock (Note [pipelined calls]). Pageable outputs: each chunk is copied out
      // as soon as its transfer is done, while the next chunk is still in flight.
      TRTET_RETURN_IF_ERROR(copy_out_pageable_outputs());
      TRTET_RETURN_IF_ERROR(call.done->synchronize());
    } else {
      wait_unlocked = std::move(call.done);  // waited on by execute_steps once the lock is released
      ++stats_.unlocked_waits;
    }
  }
  stats_.last_completion = call.completion;
  stats_.last_profile = call.profile;
  ++stats_.calls;
  return Status::Ok();
}

Status Session::stage_pageable_input(int index, const Call& call) {
  const Binding& binding = bindings_[static_cast<std::size_t>(index)];
  auto* host = static_cast<unsigned char*>(staging_[static_cast<std::size_t>(index)].host_data());
  auto* device = static_cast<unsigned char*>(binding.address);
  const auto* from = static_cast<const unsigned char*>(binding.user);
  const std::size_t chunk = chunk_bytes(binding.bytes);
  const std::size_t slice = slice_bytes(chunk);
  if (binding.bytes <= slice) {
    std::memcpy(host, from, binding.bytes);
    TRTET_CUDA_CHECK(cudaMemcpyAsync(device, host, binding.bytes, cudaMemcpyHostToDevice, call.stream));
    return Status::Ok();
  }
  // The pool's workers copy slices into pinned staging; this thread queues each chunk's
  // transfer, on the call's stream, as soon as all of that chunk's slices are copied.
  input_copies_.clear();
  for (std::size_t offset = 0; offset < binding.bytes; offset += slice) {
    input_copies_.push_back(CopyTask{host + offset, from + offset, std::min(slice, binding.bytes - offset)});
  }
  const std::size_t slices_per_chunk = chunk / slice;  // chunk_bytes() is a whole number of slices
  HostCopyPool& pool = HostCopyPool::shared();
  CopyBatch batch(input_copies_);
  pool.begin(batch, input_copies_.size());
  cudaError_t error = cudaSuccess;
  for (std::size_t first = 0; first < input_copies_.size() && error == cudaSuccess; first += slices_per_chunk) {
    const std::size_t end = std::min(first + slices_per_chunk, input_copies_.size());
    for (std::size_t t = first; t < end; ++t) pool.help_until_done(batch, t);
    const std::size_t offset = first * slice;
    const std::size_t length = std::min(chunk, binding.bytes - offset);
    error = cudaMemcpyAsync(device + offset, host + offset, length, cudaMemcpyHostToDevice, call.stream);
  }
  pool.finish(batch);
  TRTET_CUDA_CHECK(error);
  return Status::Ok();
}

Status Session::queue_pageable_output(int index, const Call& call) {
  const Binding& binding = bindings_[static_cast<std::size_t>(index)];
  auto* host = static_cast<unsigned char*>(staging_[static_cast<std::size_t>(index)].host_data());
  const auto* device = static_cast<const unsigned char*>(binding.address);
  auto* to = static_cast<unsigned char*>(binding.user);
  const std::size_t chunk = chunk_bytes(binding.bytes);
  const std::size_t slice = slice_bytes(chunk);
  for (std::size_t offset = 0; offset < binding.bytes; offset += chunk) {
    const std::size_t length = std::min(chunk, binding.bytes - offset);
    TRTET_CUDA_CHECK(cudaMemcpyAsync(host + offset, device + offset, length, cudaMemcpyDeviceToHost, call.stream));
    TRTET_RETURN_IF_ERROR(chunk_events_[output_chunk_ends_.size()].record(call.stream));  // sized by prepare_staging
    for (std::size_t part = 0; part < length; part += slice) {
      output_copies_.push_back(CopyTask{to + offset + part, host + offset + part, std::min(slice, length - part)});
    }
    output_chunk_ends_.push_back(output_copies_.size());
  }
  return Status::Ok();
}

Status Session::copy_out_pageable_outputs() {
  const std::size_t count = output_copies_.size();
  if (count == 0) return Status::Ok();
  if (count == 1) {
    TRTET_RETURN_IF_ERROR(chunk_events_[0].synchronize());
    std::memcpy(output_copies_[0].destination, output_copies_[0].source, output_copies_[0].bytes);
    return Status::Ok();
  }
  // This thread waits for each chunk's transfer and hands the chunk's slices to the pool's
  // workers, which copy them out while later chunks are still in flight; at the end it copies
  // slices too. Workers never wait for the GPU.
  HostCopyPool& pool = HostCopyPool::shared();
  CopyBatch batch(output_copies_);
  pool.begin(batch, 0);
  Status waited;
  for (std::size_t c = 0; c < output_chunk_ends_.size() && waited.ok(); ++c) {
    waited = chunk_events_[c].synchronize();
    if (waited.ok()) pool.publish(batch, output_chunk_ends_[c]);
  }
  pool.finish(batch);
  return waited;
}

std::string describe_memory(const SessionStats& stats) {
  char line[256];
  std::snprintf(line, sizeof line,
                "device reserved %llu used %llu (high %llu / %llu), host reserved %llu used %llu (high %llu / %llu)",
                static_cast<unsigned long long>(stats.device_reserved_bytes),
                static_cast<unsigned long long>(stats.device_used_bytes),
                static_cast<unsigned long long>(stats.device_reserved_high_bytes),
                static_cast<unsigned long long>(stats.device_used_high_bytes),
                static_cast<unsigned long long>(stats.host_reserved_bytes),
                static_cast<unsigned long long>(stats.host_used_bytes),
                static_cast<unsigned long long>(stats.host_reserved_high_bytes),
                static_cast<unsigned long long>(stats.host_used_high_bytes));
  return line;
}

SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SessionStats stats = stats_;
  // Read now, from the pools (a failed read leaves 0: stats cannot fail).
  if (device_pool_) {
    const Result<cuda::PoolUsage> usage = cuda::pool_usage(device_pool_.get());
    if (usage.ok()) {
      stats.device_reserved_bytes = usage->reserved;
      stats.device_used_bytes = usage->used;
      stats.device_reserved_high_bytes = usage->reserved_high;
      stats.device_used_high_bytes = usage->used_high;
    }
  }
  if (host_pool_) {
    const Result<cuda::PoolUsage> usage = cuda::pool_usage(host_pool_.get());
    if (usage.ok()) {
      stats.host_reserved_bytes = usage->reserved;
      stats.host_used_bytes = usage->used;
      stats.host_reserved_high_bytes = usage->reserved_high;
      stats.host_used_high_bytes = usage->used_high;
    }
  } else {
    for (const Staging& staging : staging_) stats.host_used_bytes += staging.host_fallback.size();
    for (const cuda::PinnedBuffer& buffer : retired_pinned_) stats.host_used_bytes += buffer.size();
    stats.host_reserved_bytes = stats.host_used_bytes;
  }
  return stats;
}

Status Session::release_unused_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (engine_ == nullptr || !initialized_) return Status::Ok();
  repeat_.kept = false;  // the next call takes the full path
  cuda::DeviceGuard device(engine_->device());
  TRTET_RETURN_IF_ERROR(device.status());
  if (device_pool_) TRTET_CUDA_CHECK(cudaMemPoolTrimTo(device_pool_.get(), 0));
  if (host_pool_) TRTET_CUDA_CHECK(cudaMemPoolTrimTo(host_pool_.get(), 0));
  return Status::Ok();
}

void Session::destroy() noexcept {
  closing_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex_);
  free_resources();
}

void Session::free_resources() noexcept {
  if (engine_ == nullptr) return;
  repeat_.kept = false;  // its graph goes below
  {
    cuda::DeviceGuard device(engine_->device());
    // Our own work only (and replays launched before now: they record completion_ too).
    if (completion_ != nullptr && (completion_pending_ || captured_)) TRTET_CUDA_WARN(cudaEventSynchronize(completion_->get()));
    if (own_stream_ != nullptr) {
      // Every use is complete: free in order on the session's own stream, not the caller's
      // (which may already be destroyed). Buffers a live graph still holds go when it goes.
      auto free_shared = [&](SharedBuffer& buffer) {
        if (buffer == nullptr) return;
        if (buffer.use_count() == 1) {
          buffer->set_stream(own_stream_);
          buffer->reset();
          buffer.reset();
        } else {
          release_shared(std::move(buffer), nullptr);
        }
      };
      for (Staging& staging : staging_) {
        free_shared(staging.device);
        staging.host.set_stream(own_stream_);
        staging.host.reset();
        staging.host_fallback.reset();
      }
      for (cuda::DeviceBuffer& buffer : retired_) buffer.set_stream(own_stream_);
      retired_.clear();
      retired_pinned_.clear();
      free_shared(empty_tensor_);
    }
    graphs_.clear();  // in-flight launches finish first; destroy waited for them anyway
    aux_streams_.reset();
    engine_.reset();
    if (own_stream_ != nullptr) {
      // The frees above complete before the pools go back, so a pool can be lent again at once.
      TRTET_CUDA_WARN(cudaStreamSynchronize(own_stream_));
      TRTET_CUDA_WARN(cudaStreamDestroy(own_stream_));
    }
    // Pools go back (Note [pools are recycled] in memory_pool.cpp); memory a live graph still
    // holds is released when that graph goes.
    host_pool_.reset();
    device_pool_.reset();
    own_stream_ = nullptr;
    join_in_.reset();
    slots_.clear();
    call_events_.clear();  // a caller still waiting on one keeps it
    completion_.reset();  // a graph that holds it keeps it
    chunk_events_.clear();
    drain_released_graph_holds();
  }
  staging_.clear();
  bindings_.clear();
  max_bytes_.clear();
  initialized_ = false;
  completion_pending_ = false;
  engine_pending_ = false;
  engine_slot_ = -1;
  slot_ = 0;
  slot_stream_id_ = 0;
  staged_before_ = false;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
