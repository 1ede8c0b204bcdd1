#include "delegate/session.h"

#include <nvtx3/nvToolsExt.h>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "delegate/aliases.h"
#include "delegate/checks.h"
#include "delegate/staging_layout.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;             // one push, one pop
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace

Status Session::execute(TensorView* args, std::size_t count, CallRecord* record) {
  // An engine (or a runtime's resize callback) that throws fails the call; enqueue records the
  // completion event for whatever it queued before the throw.
  return without_exceptions("execute", [&] { return execute_steps(args, count, record); });
}

Status Session::execute_steps(TensorView* args, std::size_t count, CallRecord* record) {
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
    TRTET_ASSIGN_OR_RETURN(call.where, streams_.resolve(engine_->device(), engine_->enqueue_is_synchronous()));
    call.facts.caller_selected = call.where.choice.selected;
    call.facts.capturing = call.where.facts.capturing;
    if (record != nullptr) {  // profiled (call_profile.h): a capture records no marks of its own
      call.record = record;
      call.marks = call.capturing() ? nullptr : record->marks;
    }
    // Frees of what released graphs held: never while this thread captures (in global capture mode
    // a cudaFreeAsync on any stream invalidates the capture).
    if (!call.capturing()) drain_released_graph_holds();
    if (last_call_.repeated_by(args, count, call)) return repeat_call(call, wait_unlocked);
    last_call_.forget();  // kept again below only if this call can be repeated as it is
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
    if (call.record != nullptr) {
      fill_record(call, call.capturing() ? CallPath::kCaptured
                        : call.replayed != nullptr ? CallPath::kGraphReplay : CallPath::kEager);
    }
    last_call_.remember(args, count, call, ordering_.captured());
  }
  // The lock is released: other threads queue their calls while this one waits for its own host
  // data. Nothing of the session is touched from here on (destroy() may run, and the ExecuTorch
  // adapter may then end the session's lifetime); the event is shared with this call.
  if (wait_unlocked != nullptr) return wait_unlocked->synchronize();
  return Status::Ok();
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
    TRTET_ASSIGN_OR_RETURN(binding.kind, classify(args[i], call.capturing()));
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
  const bool first_use = !profile_used_[static_cast<std::size_t>(call.profile)];
  TRTET_CHECK_OR_RETURN(!(call.capturing() && first_use), kInvalidArgument,
                        "the input shapes need optimization profile %d, which this engine has not used yet, and its "
                        "first use may allocate, which nothing may do while the stream is being captured: run the "
                        "call once before capturing",
                        call.profile);
  TRTET_RETURN_IF_ERROR(engine_->select_profile(call.profile, call.stream()));
  active_profile_ = call.profile;
  profile_used_[static_cast<std::size_t>(call.profile)] = true;
  ++stats_.profile_switches;
  if (first_use && options_.staging_budget_bytes > 0) {
    // This profile's output sizes, now that it is selected (Note [staging budget]).
    const Status learned = staging_.learn_output_bounds(*engine_, call.profile, /*first=*/false);
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
    if (engine_->io(o).is_input) continue;
    TRTET_ASSIGN_OR_RETURN(Shape shape, engine_->output_shape(o));
    TRTET_RETURN_IF_ERROR(bind_output(o, args, shape, call));
  }
  TRTET_ASSIGN_OR_RETURN(call.completion, decide_completion(call.facts));
  return Status::Ok();
}

Status Session::bind_output(int o, TensorView* args, const Shape& inferred, Call& call) {
  TensorView& view = args[o];
  const engine::IoDesc& io = engine_->io(o);
  Binding& binding = bindings_[static_cast<std::size_t>(o)];
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
    const Binding& source = bindings_[static_cast<std::size_t>(input)];
    if (view.data != source.user) {
      TRTET_CHECK_OR_RETURN(view.set_data != nullptr, kInvalidArgument,
                            "output %d (\"%s\") aliases input %d, but the runtime cannot point it at the input's memory",
                            o, io.name.c_str(), input);
      TRTET_RETURN_IF_ERROR(view.set_data(view.context, view, source.user));
    }
    binding.kind = source.kind;
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
  TRTET_ASSIGN_OR_RETURN(binding.kind, classify(view, call.capturing()));
  TRTET_CHECK_OR_RETURN(!(call.capturing() && binding.kind == MemoryKind::kPageableHost), kInvalidArgument,
                        "output %d (\"%s\") is in pageable host memory, which cannot be used while the stream is "
                        "being captured; use device or pinned host memory",
                        o, io.name.c_str());
  mark_host(o, call);
  return Status::Ok();
}

Status Session::prepare_staging(Call& call) {
  const int count = engine_->io_count();
  // A call on the stream of the last call that staged keeps its slot: the stream orders them. A
  // call on another stream takes the next slot (Note [pipelined calls]). A capture takes the slot
  // of the last call that staged, which a warm-up call has sized. Kept only if something is staged.
  call.slot = staging_.choose_slot(call.where.id, call.capturing());
  for (int i = 0; i < count; ++i) {
    Binding& binding = bindings_[static_cast<std::size_t>(i)];
    const char* name = engine_->io(i).name.c_str();
    if (binding.bytes == 0) {
      TRTET_RETURN_IF_ERROR(staging_.ensure_empty_tensor(i, name, call.stream(), call.capturing()));
      binding.address = staging_.empty_tensor();
      continue;
    }
    if (is_device_accessible(binding.kind)) {
      binding.address = binding.user;
      continue;
    }
    TRTET_RETURN_IF_ERROR(staging_.grow_device(call.slot, i, binding.bytes, call.stream(), call.capturing(), name,
                                               ordering_.completion()->get()));
    binding.address = staging_.device_data(call.slot, i);
    binding.staged = true;
    (engine_->io(i).is_input ? call.staged_inputs : call.staged_outputs) = true;
    if (binding.kind != MemoryKind::kPageableHost) continue;
    TRTET_RETURN_IF_ERROR(staging_.grow_host(i, binding.bytes, call.stream()));
    if (!engine_->io(i).is_input) {
      const std::size_t chunk = chunk_bytes(binding.bytes);
      call.output_chunks += (binding.bytes + chunk - 1) / chunk;
    }
  }
  TRTET_RETURN_IF_ERROR(transfers_.ensure_chunk_events(call.output_chunks));
  if (call.staged_inputs || call.staged_outputs) {
    staging_.note_staged(call.slot, call.where.id);
  } else {
    call.slot = -1;
  }
  return Status::Ok();
}

Status Session::prepare_completion(Call& call) {
  if (call.completion == Completion::kReturnAtOnce) return Status::Ok();
  TRTET_ASSIGN_OR_RETURN(call.done, ordering_.call_event());
  return Status::Ok();
}

Status Session::bind_addresses() {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    TRTET_RETURN_IF_ERROR(engine_->set_tensor_address(i, bindings_[static_cast<std::size_t>(i)].address));
  }
  return Status::Ok();
}

Status Session::queue_work(Call& call) {
  TRTET_RETURN_IF_ERROR(ordering_.join_caller(call));
  TRTET_RETURN_IF_ERROR(ordering_.order_after_previous_calls(call, staging_.has_retired()));
  staging_.free_retired();  // outgrown staging: freed in order after every earlier use (waited for above)
  TRTET_RETURN_IF_ERROR(ordering_.order_staging_writes(call));
  if (call.staged_inputs) record_mark(call.marks, Mark::kCopyInStart, call.stream());
  TRTET_RETURN_IF_ERROR(copy_inputs_in(call));
  if (call.staged_inputs) record_mark(call.marks, Mark::kCopyInEnd, call.stream());
  if (call.completion == Completion::kWaitInputsConsumed) TRTET_RETURN_IF_ERROR(call.done->record(call.stream()));
  TRTET_RETURN_IF_ERROR(ordering_.order_engine(call));
  record_mark(call.marks, Mark::kEngineStart, call.stream());
  TRTET_RETURN_IF_ERROR(runner_.run(*engine_, call, bindings_));
  record_mark(call.marks, Mark::kEngineEnd, call.stream());
  TRTET_RETURN_IF_ERROR(ordering_.record_progress(call, /*engine_done=*/true, /*copies_done=*/false));
  TRTET_RETURN_IF_ERROR(copy_outputs_out(call));
  if (call.staged_outputs) record_mark(call.marks, Mark::kCopyOutEnd, call.stream());
  TRTET_RETURN_IF_ERROR(ordering_.record_progress(call, /*engine_done=*/false, /*copies_done=*/true));
  if (call.completion == Completion::kWaitOutputsReady) TRTET_RETURN_IF_ERROR(call.done->record(call.stream()));
  return Status::Ok();
}

Status Session::enqueue(Call& call) {
  Status queued = without_exceptions("the engine", [&]() -> Status { return queue_work(call); });
  if (call.cross_stream) ++stats_.cross_stream_waits;
  const Status recorded = ordering_.record_completion(call, queued);
  if (call.capturing() && queued.ok() && recorded.ok()) queued = retain_for_graph(call);
  TRTET_RETURN_IF_ERROR(queued);
  return recorded;
}

Status Session::copy_inputs_in(const Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const Binding& binding = bindings_[static_cast<std::size_t>(i)];
    if (!engine_->io(i).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(transfers_.send(static_cast<unsigned char*>(binding.address),
                                            static_cast<const unsigned char*>(binding.user), staging_.host_data(i),
                                            binding.bytes, call.stream()));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(binding.address, binding.user, binding.bytes, cudaMemcpyHostToDevice, call.stream()));
    }
  }
  return Status::Ok();
}

Status Session::copy_outputs_out(const Call& call) {
  transfers_.begin_outputs();
  const int count = engine_->io_count();
  for (int o = 0; o < count; ++o) {
    const Binding& binding = bindings_[static_cast<std::size_t>(o)];
    if (engine_->io(o).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(transfers_.queue_receive(static_cast<unsigned char*>(binding.user),
                                                     static_cast<const unsigned char*>(binding.address),
                                                     staging_.host_data(o), binding.bytes, call.stream()));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(binding.user, binding.address, binding.bytes, cudaMemcpyDeviceToHost, call.stream()));
    }
  }
  return Status::Ok();
}

Status Session::retain_for_graph(const Call& call) {
  GraphHold hold;
  hold.device = engine_->device();
  hold.events.push_back(ordering_.completion());
  hold.buffers.push_back(staging_.empty_tensor_buffer());
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    if (bindings_[static_cast<std::size_t>(i)].staged) hold.buffers.push_back(staging_.device_buffer(call.slot, i));
  }
  TRTET_RETURN_IF_ERROR(retain_in_capture(call.stream(), std::move(hold)));
  ordering_.mark_captured();
  ++stats_.captures;
  return Status::Ok();
}

Status Session::complete(Call& call, SharedEvent& wait_unlocked) {
  if (call.completion != Completion::kReturnAtOnce) {
    if (call.facts.pageable) {
      // Pageable I/O is done with the session's host staging only once this wait is over, so it
      // waits under the lock (Note [pipelined calls]). Pageable outputs: each chunk is copied out
      // as soon as its transfer is done, while the next chunk is still in flight.
      TRTET_RETURN_IF_ERROR(transfers_.finish_receives());
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

Status Session::repeat_call(Call& call, SharedEvent& wait_unlocked) {
  last_call_.forget();  // kept again once the work and its record are queued
  record_mark(call.marks, Mark::kEngineStart, call.stream());
  const Status queued = without_exceptions("the engine", [&]() -> Status {
    if (last_call_.graph() == nullptr) return engine_->enqueue(call.stream());
    TRTET_CUDA_CHECK(cudaGraphLaunch(last_call_.graph(), call.stream()));
    return Status::Ok();
  });
  record_mark(call.marks, Mark::kEngineEnd, call.stream());
  // As enqueue leaves a call that queued no host data: the completion event covers whatever was queued.
  TRTET_RETURN_IF_ERROR(ordering_.record_repeat(call.stream()));
  TRTET_RETURN_IF_ERROR(queued);
  if (last_call_.graph() != nullptr) {
    runner_.count_launch();
    ++stats_.repeated_replays;
  } else {
    ++stats_.repeated_enqueues;
  }
  last_call_.keep_again();
  call.profile = last_call_.profile();  // call.completion is kReturnAtOnce: nothing to wait for
  TRTET_RETURN_IF_ERROR(complete(call, wait_unlocked));
  if (call.record != nullptr) fill_record(call, CallPath::kRepeat);
  return Status::Ok();
}

void Session::fill_record(const Call& call, CallPath path) {
  CallRecord& record = *call.record;
  record.filled = true;
  record.path = path;
  record.profile = call.profile;
  record.staged_bytes = 0;
  if (path != CallPath::kRepeat) {  // a repeat stages nothing
    for (const Binding& binding : bindings_) record.staged_bytes += binding.staged ? binding.bytes : 0;
  }
  record.green_known = call.where.green_known;
  record.green_context = call.where.facts.green_context;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
