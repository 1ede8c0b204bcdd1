#include "session/session.h"

#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <optional>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "session/aliases.h"
#include "session/checks.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;             // one push, one pop
  NvtxRange& operator=(const NvtxRange&) = delete;
};

using LockClock = std::chrono::steady_clock;

// SessionOptions::time_the_lock: made right after the lock is taken (`asked` is when execute asked
// for it; nullopt when the option is off, and then no clock is read), it adds the wait at once and
// the hold when it ends, which is before the lock is released (declared after the lock_guard).
class LockTimer {
 public:
  LockTimer(std::optional<LockClock::time_point> asked, SessionStats& stats) noexcept : stats_(stats) {
    if (!asked) return;
    taken_ = LockClock::now();
    stats_.lock_wait_ns += static_cast<std::uint64_t>(std::chrono::nanoseconds(*taken_ - *asked).count());
  }
  ~LockTimer() {
    if (taken_) {
      stats_.lock_held_ns += static_cast<std::uint64_t>(std::chrono::nanoseconds(LockClock::now() - *taken_).count());
    }
  }
  LockTimer(const LockTimer&) = delete;  // one hold
  LockTimer& operator=(const LockTimer&) = delete;

 private:
  SessionStats& stats_;
  std::optional<LockClock::time_point> taken_;
};

}  // namespace

Status Session::execute(TensorView* args, std::size_t count, CallRecord* record) {
  TRTET_CHECK_OR_RETURN(!closing_.load(std::memory_order_acquire), kInvalidState,
                        "execute on a session that is being destroyed");
  NvtxRange range("trtet::execute");
  SharedEvent wait_unlocked;  // the call's own event, waited on once the lock is released
  {
    const std::optional<LockClock::time_point> asked =
        options_.time_the_lock ? std::optional<LockClock::time_point>(LockClock::now()) : std::nullopt;
    std::lock_guard<SpinningMutex> lock(mutex_);
    const LockTimer timer(asked, stats_);  // ends (and adds the hold) before the lock is released
    TRTET_CHECK_OR_RETURN(initialized_ && engine_ != nullptr, kInvalidState,
                          "execute on a session that is not initialized or already destroyed");
    TRTET_CHECK_OR_RETURN(args != nullptr || count == 0, kInvalidArgument, "execute got a null argument array");
    cuda::DeviceGuard device(engine_->device());
    TRTET_RETURN_IF_ERROR(device.status());

    CallPlan& plan = plan_;  // where the call runs and who records it: all the repeat check needs
    plan.start();
    TRTET_ASSIGN_OR_RETURN(plan.where, streams_.resolve(engine_->device(), engine_->enqueue_is_synchronous()));
    if (record != nullptr) {  // profiled (call_timing.h): a capture records no marks of its own
      plan.record = record;
      plan.marks = plan.capturing() ? nullptr : record->marks;
    }
    // Frees of what released graphs held: never while this thread captures (in global capture mode
    // a cudaFreeAsync on any stream invalidates the capture).
    if (!plan.capturing()) drain_released_graph_holds();
    if (last_call_.repeated_by(args, count, plan.where)) return repeat_call(plan, wait_unlocked);
    last_call_.forget();  // kept again below only if this call can be repeated as it is
    TRTET_RETURN_IF_ERROR(plan_call(args, count, plan));
    SharedEvent done;  // recorded when the call's host data is done; waited on by the caller
    if (plan.completion != Completion::kReturnAtOnce) {
      TRTET_ASSIGN_OR_RETURN(done, ordering_.call_event());
    }
    TRTET_RETURN_IF_ERROR(bind_addresses(plan));
    // Every check has passed: from here on the call queues work.
    TRTET_ASSIGN_OR_RETURN(const QueuedCall queued, queue_call(plan, done));
    TRTET_RETURN_IF_ERROR(complete(plan, std::move(done), wait_unlocked));
    if (plan.record != nullptr) {
      fill_record(plan, plan.capturing()               ? CallPath::kCaptured
                        : queued.run.launched != nullptr ? CallPath::kGraphReplay
                                                         : CallPath::kEager);
    }
    last_call_.remember(args, count, plan, queued.order, queued.run);
  }
  // The lock is released: other threads queue their calls while this one waits for its own host
  // data. Nothing of the session is touched from here on (destroy() may run, and the ExecuTorch
  // adapter may then end the session's lifetime); the event is shared with this call.
  if (wait_unlocked != nullptr) return wait_unlocked->synchronize();
  return Status::Ok();
}

Result<PointerFacts> Session::classify(const TensorView& view, bool capturing) {
  // A capture records addresses for good: ask the driver, not the cache, whose entry may predate a
  // free and a reuse of the address.
  PointerFacts facts;
  if (capturing) {
    TRTET_ASSIGN_OR_RETURN(facts, pointer_facts(view.data, engine_->device()));
  } else {
    TRTET_ASSIGN_OR_RETURN(facts, pointer_kinds_.classify(view.data, engine_->device()));
  }
  if (!is_device_accessible(facts.kind) && host_memory_is_device_accessible_) facts = PointerFacts{MemoryKind::kManaged, false};
  const MemoryKind kind = facts.kind;
  // A tensor its runtime says is on the GPU is bound as it is: its memory must be, or the engine
  // would write host memory through a device address.
  TRTET_CHECK_OR_RETURN(view.hint != MemoryHint::kDevice || is_device_accessible(kind), kInvalidArgument,
                        "a tensor the program places on the GPU holds %s memory at %p: pass device memory for it",
                        to_string(kind), view.data);
  return facts;
}

Status Session::plan_call(TensorView* args, std::size_t count, CallPlan& plan) {
  TRTET_ASSIGN_OR_RETURN(plan.profile, check_arguments(*engine_, args, count));
  TRTET_ASSIGN_OR_RETURN(plan.host, classify_arguments(args, plan));
  TRTET_RETURN_IF_ERROR(select_profile(plan));
  TRTET_RETURN_IF_ERROR(resolve_shapes(args, plan));
  return prepare_staging(plan);
}

void Session::mark_host(int index, const CallPlan& plan, HostIo& host) const {
  const Binding& binding = plan.bindings[static_cast<std::size_t>(index)];
  if (is_device_accessible(binding.kind)) return;
  (engine_->io(index).is_input ? host.inputs : host.outputs) = true;
  if (binding.kind == MemoryKind::kPageableHost) host.pageable = true;
}

Result<HostIo> Session::classify_arguments(TensorView* args, CallPlan& plan) {
  HostIo host;
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    Binding& binding = plan.bindings[static_cast<std::size_t>(i)];
    binding = Binding{};
    if (!engine_->io(i).is_input) continue;
    binding.user = args[i].data;
    if (args[i].data == nullptr) continue;  // an empty tensor
    TRTET_ASSIGN_OR_RETURN(const PointerFacts facts, classify(args[i], plan.capturing()));
    binding.kind = facts.kind;
    binding.device_mapped = facts.device_mapped;
    mark_host(i, plan, host);
  }
  for (int o = 0; o < count; ++o) {
    const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
    if (input < 0) continue;
    const Binding& source = plan.bindings[static_cast<std::size_t>(input)];
    TRTET_CHECK_OR_RETURN(source.user != nullptr && is_device_accessible(source.kind), kInvalidArgument,
                          "output %d (\"%s\") is updated in place in input %d (\"%s\"), which must be device-resident "
                          "but is in %s memory",
                          o, engine_->io(o).name.c_str(), input, engine_->io(input).name.c_str(),
                          source.user == nullptr ? "no" : to_string(source.kind));
  }
  return host;
}

Status Session::select_profile(const CallPlan& plan) {
  TRTET_ASSIGN_OR_RETURN(const ProfileChange change,
                         profiles_.select(*engine_, plan.profile, plan.stream(), plan.capturing()));
  if (change.first_use && options_.staging_budget_bytes > 0) {
    // This profile's output sizes, now that it is selected (Note [staging budget]).
    const Status learned = staging_.learn_output_bounds(*engine_, plan.profile, /*first=*/false);
    if (!learned.ok()) log(LogLevel::kDebug, "output sizes at profile %d's maximum unknown: %s", plan.profile,
                           learned.to_string().c_str());
  }
  return Status::Ok();
}

Status Session::resolve_shapes(TensorView* args, CallPlan& plan) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    if (!engine_->io(i).is_input) continue;
    TRTET_RETURN_IF_ERROR(engine_->set_input_shape(i, args[i].shape));
    plan.bindings[static_cast<std::size_t>(i)].shape = args[i].shape;
    plan.bindings[static_cast<std::size_t>(i)].bytes = byte_size(args[i].shape, args[i].dtype);  // checked: no overflow
  }
  TRTET_ASSIGN_OR_RETURN(const int unresolved, engine_->infer_shapes());
  TRTET_CHECK_OR_RETURN(unresolved == 0, kNotSupported,
                        "%d output shape(s) depend on data and stay unresolved after shape inference", unresolved);
  for (int o = 0; o < count; ++o) {
    if (engine_->io(o).is_input) continue;
    TRTET_ASSIGN_OR_RETURN(Shape shape, engine_->output_shape(o));
    TRTET_RETURN_IF_ERROR(bind_output(o, args, shape, plan));
  }
  TRTET_ASSIGN_OR_RETURN(plan.completion, decide_completion(plan.completion_facts()));
  return Status::Ok();
}

Status Session::bind_output(int o, TensorView* args, const Shape& inferred, CallPlan& plan) {
  TensorView& view = args[o];
  const engine::IoDesc& io = engine_->io(o);
  Binding& binding = plan.bindings[static_cast<std::size_t>(o)];
  Shape shape = inferred;
  // A 0-d output is accepted where the engine reports [1] (TensorRT has no 0-d outputs).
  if (view.shape.rank == 0 && shape.rank == 1 && shape[0] == 1) shape = view.shape;
  if (view.shape != shape) {
    TRTET_CHECK_OR_RETURN(view.resize != nullptr, kInvalidArgument,
                          "output %d (\"%s\") has shape %s, the engine produces %s, and the runtime cannot resize it", o,
                          io.name.c_str(), view.shape.to_string().c_str(), shape.to_string().c_str());
    TRTET_RETURN_IF_ERROR(view.resize(view.context, view, shape));
    TRTET_CHECK_OR_RETURN(view.shape == shape, kInternal, "output %d (\"%s\") was resized to %s, not %s", o,
                          io.name.c_str(), view.shape.to_string().c_str(), shape.to_string().c_str());
  }
  TRTET_ASSIGN_OR_RETURN(binding.bytes, checked_byte_size(shape, io.dtype, "output", o, io.name));
  const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
  if (input >= 0) {
    // Written in place into the input's (device-resident) memory: only if it fits there.
    TRTET_RETURN_IF_ERROR(check_alias_fits(*engine_, o, input, binding.bytes, args[input].capacity_bytes));
    const Binding& source = plan.bindings[static_cast<std::size_t>(input)];
    if (view.data != source.user) {
      TRTET_CHECK_OR_RETURN(view.set_data != nullptr, kInvalidArgument,
                            "output %d (\"%s\") aliases input %d, but the runtime cannot point it at the input's memory",
                            o, io.name.c_str(), input);
      TRTET_RETURN_IF_ERROR(view.set_data(view.context, view, source.user));
    }
    binding.kind = source.kind;
    binding.device_mapped = source.device_mapped;
    binding.user = source.user;
    return Status::Ok();
  }
  TRTET_CHECK_OR_RETURN(view.capacity_bytes >= binding.bytes, kInvalidArgument,
                        "output %d (\"%s\") holds %zu bytes, shape %s of %s needs %zu", o, io.name.c_str(),
                        view.capacity_bytes, shape.to_string().c_str(), to_string(io.dtype), binding.bytes);
  binding.user = view.data;
  if (binding.bytes == 0) return Status::Ok();
  TRTET_CHECK_OR_RETURN(view.data != nullptr, kInvalidArgument, "output %d (\"%s\") has no data pointer", o,
                        io.name.c_str());
  // Classified only now: the runtime may have placed the output in its resize.
  TRTET_ASSIGN_OR_RETURN(const PointerFacts facts, classify(view, plan.capturing()));
  binding.kind = facts.kind;
  binding.device_mapped = facts.device_mapped;
  TRTET_CHECK_OR_RETURN(!(plan.capturing() && binding.kind == MemoryKind::kPageableHost), kInvalidArgument,
                        "output %d (\"%s\") is in pageable host memory, which cannot be used while the stream is "
                        "being captured; use device or pinned host memory",
                        o, io.name.c_str());
  mark_host(o, plan, plan.host);
  return Status::Ok();
}

Status Session::prepare_staging(CallPlan& plan) {
  const int count = engine_->io_count();
  // A call on the stream of the last call that staged keeps its slot: the stream orders them. A
  // call on another stream takes the next slot (Note [pipelined calls]). A capture takes the slot
  // of the last call that staged, which a warm-up call has sized. Kept only if something is staged.
  plan.slot = staging_.choose_slot(plan.where.id, plan.capturing());
  for (int i = 0; i < count; ++i) {
    Binding& binding = plan.bindings[static_cast<std::size_t>(i)];
    const char* name = engine_->io(i).name.c_str();
    if (binding.bytes == 0) {
      TRTET_RETURN_IF_ERROR(staging_.ensure_empty_tensor(i, name, plan.stream(), plan.capturing()));
      binding.address = staging_.empty_tensor();
      continue;
    }
    if (is_device_accessible(binding.kind)) {
      binding.address = binding.user;
      continue;
    }
    TRTET_RETURN_IF_ERROR(staging_.grow_device(plan.slot, i, binding.bytes, plan.stream(), plan.capturing(), name));
    binding.address = staging_.device_data(plan.slot, i);
    binding.staged = true;
    (engine_->io(i).is_input ? plan.staged_inputs : plan.staged_outputs) = true;
    if (binding.kind != MemoryKind::kPageableHost) continue;
    TRTET_RETURN_IF_ERROR(staging_.grow_host(i, binding.bytes, plan.stream()));
    if (!engine_->io(i).is_input) plan.output_chunks += chunk_count(binding.bytes);
  }
  TRTET_RETURN_IF_ERROR(staging_.ensure_chunk_events(plan.output_chunks));
  plan.frees_staging = staging_.retiring();
  if (plan.staged_inputs || plan.staged_outputs) {
    staging_.note_staged(plan.slot, plan.where.id);
  } else {
    plan.slot = -1;
  }
  return Status::Ok();
}

Status Session::bind_addresses(const CallPlan& plan) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    TRTET_RETURN_IF_ERROR(engine_->set_tensor_address(i, plan.bindings[static_cast<std::size_t>(i)].address));
  }
  return Status::Ok();
}

Result<QueuedCall> Session::queue_call(const CallPlan& plan, const SharedEvent& done) {
  // Each phase consumes the one before (Note [the call schedule]); the waits, marks and event
  // records between them are the schedule's.
  TRTET_ASSIGN_OR_RETURN(CallSchedule::CopyIn copy_in, ordering_.begin(plan, done.get(), staging_));
  TRTET_ASSIGN_OR_RETURN(CallSchedule::Engine engine,
                         std::move(copy_in).copy_in([&] { return copy_inputs_in(plan); }));
  TRTET_ASSIGN_OR_RETURN(CallSchedule::CopyOut copy_out,
                         std::move(engine).engine([&] { return runner_.run(*engine_, plan); }));
  TRTET_ASSIGN_OR_RETURN(CallSchedule::Done queued,
                         std::move(copy_out).copy_out([&] { return copy_outputs_out(plan); }));
  return std::move(queued).finish();
}

Status Session::transfer_pinned(const CallPlan& plan, const Binding& binding, cudaMemcpyKind kind) {
  // A small one by the copy kernel where the stream is a partition's and the device reads the memory
  // at its address (Note [small copies]; the binding's facts are this call's: the kind cache asks the
  // driver again for page-locked memory); queue_transfer checks the size.
  const bool by_kernel = plan.where.on_partition() && binding.device_mapped;
  const bool in = kind == cudaMemcpyHostToDevice;
  bool kernel = false;
  TRTET_RETURN_IF_ERROR(staging::queue_transfer(in ? binding.address : binding.user, in ? binding.user : binding.address,
                                                binding.bytes, kind, plan.stream(), by_kernel, &kernel));
  ++(kernel ? pinned_kernel_copies_ : pinned_engine_copies_);
  return Status::Ok();
}

Status Session::copy_inputs_in(const CallPlan& plan) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const Binding& binding = plan.bindings[static_cast<std::size_t>(i)];
    if (!engine_->io(i).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      ContiguousChunks chunks(staging_.host_data(i), nullptr, plan.where.on_partition());
      TRTET_RETURN_IF_ERROR(copies_.send(static_cast<unsigned char*>(binding.address),
                                         static_cast<const unsigned char*>(binding.user), binding.bytes, plan.stream(),
                                         chunks));
    } else {  // pinned: straight to the device
      TRTET_RETURN_IF_ERROR(transfer_pinned(plan, binding, cudaMemcpyHostToDevice));
    }
  }
  return Status::Ok();
}

Status Session::copy_outputs_out(const CallPlan& plan) {
  copies_.clear();  // what a failed call left queued
  const int count = engine_->io_count();
  for (int o = 0; o < count; ++o) {
    const Binding& binding = plan.bindings[static_cast<std::size_t>(o)];
    if (engine_->io(o).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      ContiguousChunks chunks(staging_.host_data(o), staging_.chunk_events() + copies_.queued_chunks(),
                              plan.where.on_partition());
      TRTET_RETURN_IF_ERROR(copies_.queue_receive(static_cast<unsigned char*>(binding.user),
                                                  static_cast<const unsigned char*>(binding.address), binding.bytes,
                                                  plan.stream(), chunks));
    } else {
      TRTET_RETURN_IF_ERROR(transfer_pinned(plan, binding, cudaMemcpyDeviceToHost));
    }
  }
  return Status::Ok();
}

Status Session::complete(const CallPlan& plan, SharedEvent done, SharedEvent& wait_unlocked) {
  if (plan.completion != Completion::kReturnAtOnce) {
    if (plan.host.pageable) {
      // Pageable I/O is done with the session's host staging only once this wait is over, so it
      // waits under the lock (Note [pipelined calls]). Pageable outputs: each chunk is copied out
      // as soon as its transfer is done, while the next chunk is still in flight.
      TRTET_RETURN_IF_ERROR(copies_.finish_receives());
      TRTET_RETURN_IF_ERROR(done->synchronize());
    } else {
      wait_unlocked = std::move(done);  // waited on by execute_steps once the lock is released
      ++stats_.unlocked_waits;
    }
  }
  stats_.last_completion = plan.completion;
  stats_.last_profile = plan.profile;
  ++stats_.calls;
  return Status::Ok();
}

Status Session::repeat_call(CallPlan& plan, SharedEvent& wait_unlocked) {
  last_call_.forget();  // kept again once the work and its record are queued
  plan.profile = last_call_.profile();  // plan.completion is kReturnAtOnce: nothing to wait for
  CallSchedule::Repeat repeat = ordering_.begin_repeat(plan);
  TRTET_ASSIGN_OR_RETURN(CallSchedule::Done queued, std::move(repeat).engine([&] {
    return runner_.repeat(*engine_, plan.stream(), last_call_.graph());
  }));
  TRTET_ASSIGN_OR_RETURN(const QueuedCall call, std::move(queued).finish());
  if (call.run.launched != nullptr) {
    runner_.count_launch();
    ++stats_.repeated_replays;
  } else {
    ++stats_.repeated_enqueues;
  }
  last_call_.keep_again();
  TRTET_RETURN_IF_ERROR(complete(plan, nullptr, wait_unlocked));
  if (plan.record != nullptr) fill_record(plan, CallPath::kRepeat);
  return Status::Ok();
}

void Session::fill_record(const CallPlan& plan, CallPath path) {
  CallRecord& record = *plan.record;
  record.filled = true;
  record.path = path;
  record.profile = plan.profile;
  record.staged_bytes = 0;
  if (path != CallPath::kRepeat) {  // a repeat stages nothing
    for (const Binding& binding : plan.bindings) record.staged_bytes += binding.staged ? binding.bytes : 0;
  }
  record.green_known = plan.where.green_known;
  record.green_context = plan.where.facts.green_context;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
