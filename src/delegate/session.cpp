#include "delegate/session.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstring>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/stream_facts.h"
#include "delegate/checks.h"
#include "green/current.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

/// Staging grows by at least half its size, so a slowly growing shape reallocates rarely.
std::size_t grown_capacity(std::size_t current, std::size_t needed) {
  return std::max(needed, current + current / 2);
}

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;             // one push, one pop
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace

Session::Session(engine::EnginePtr engine) noexcept : engine_(std::move(engine)) {}

Session::~Session() { destroy(); }

Status Session::initialize() {
  std::lock_guard<std::mutex> lock(mutex_);
  TRTET_CHECK_OR_RETURN(engine_ != nullptr, kInvalidState, "session has no engine");
  TRTET_CHECK_OR_RETURN(!initialized_, kInvalidState, "session is already initialized");
  const engine::Engine& engine = *engine_;
  const int count = engine.io_count();
  TRTET_CHECK_OR_RETURN(count > 0, kInvalidProgram, "engine has no bindings");
  for (int i = 0; i < count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    if (!io.is_input) continue;
    TRTET_CHECK_OR_RETURN(io.min_shape.rank == io.max_shape.rank, kInvalidProgram,
                          "input %d (\"%s\"): profile bounds %s and %s differ in rank", i, io.name.c_str(),
                          io.min_shape.to_string().c_str(), io.max_shape.to_string().c_str());
    for (int d = 0; d < io.min_shape.rank; ++d) {
      TRTET_CHECK_OR_RETURN(io.min_shape[d] <= io.max_shape[d], kInvalidProgram,
                            "input %d (\"%s\"): profile minimum %s exceeds maximum %s", i, io.name.c_str(),
                            io.min_shape.to_string().c_str(), io.max_shape.to_string().c_str());
    }
  }
  alias_input_of_output_.assign(static_cast<std::size_t>(count), -1);
  for (const engine::Alias& alias : engine.aliases()) {
    TRTET_CHECK_OR_RETURN(alias.output >= 0 && alias.output < count && !engine.io(alias.output).is_input,
                          kInvalidProgram, "alias names binding %d as an output, which it is not", alias.output);
    TRTET_CHECK_OR_RETURN(alias.input >= 0 && alias.input < count && engine.io(alias.input).is_input,
                          kInvalidProgram, "alias names binding %d as an input, which it is not", alias.input);
    TRTET_CHECK_OR_RETURN(engine.io(alias.output).dtype == engine.io(alias.input).dtype, kInvalidProgram,
                          "aliased output \"%s\" and input \"%s\" differ in dtype", engine.io(alias.output).name.c_str(),
                          engine.io(alias.input).name.c_str());
    alias_input_of_output_[static_cast<std::size_t>(alias.output)] = alias.input;
  }

  TRTET_RETURN_IF_ERROR(cuda::check_device_index(engine.device()));
  cuda::DeviceGuard device(engine.device());
  TRTET_RETURN_IF_ERROR(device.status());
  int integrated = 0;
  int ats = 0;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, engine.device()));
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&ats, cudaDevAttrPageableMemoryAccessUsesHostPageTables, engine.device()));
  host_memory_is_device_accessible_ = integrated != 0 || ats != 0;

  TRTET_ASSIGN_OR_RETURN(inputs_consumed_, cuda::Event::create());
  TRTET_ASSIGN_OR_RETURN(completion_, cuda::Event::create());
  chunk_events_.clear();
  for (int i = 0; i < kChunkEvents; ++i) {
    TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
    chunk_events_.push_back(std::move(event));
  }
  host_copies_.reserve(kChunkEvents);
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&private_stream_, cudaStreamNonBlocking));
  TRTET_ASSIGN_OR_RETURN(empty_tensor_, cuda::DeviceBuffer::allocate(256, private_stream_));
  auto pool = cuda::HostMemoryPool::create(engine.device());
  if (pool.ok()) {
    host_pool_ = std::move(pool).value();
  } else {
    log(LogLevel::kWarning, "host staging falls back to cudaHostAlloc, whose growth may synchronize the device: %s",
        pool.status().to_string().c_str());
  }
  TRTET_CUDA_CHECK(cudaStreamSynchronize(private_stream_));  // our own stream only

  bindings_.assign(static_cast<std::size_t>(count), Binding{});
  staging_.clear();
  staging_.resize(static_cast<std::size_t>(count));
  initialized_ = true;
  return Status::Ok();
}

Status Session::execute(TensorView* args, std::size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  TRTET_CHECK_OR_RETURN(initialized_ && engine_ != nullptr, kInvalidState,
                        "execute on a session that is not initialized or already destroyed");
  TRTET_CHECK_OR_RETURN(args != nullptr || count == 0, kInvalidArgument, "execute got a null argument array");
  NvtxRange range("trtet::execute");
  cuda::DeviceGuard device(engine_->device());
  TRTET_RETURN_IF_ERROR(device.status());

  Call call;
  TRTET_RETURN_IF_ERROR(resolve_stream(call));
  TRTET_RETURN_IF_ERROR(check_arguments(*engine_, args, count));
  TRTET_RETURN_IF_ERROR(classify_arguments(args, call));
  // Checks are done: from here on the call does work.
  TRTET_RETURN_IF_ERROR(order_after_previous_call(call));
  TRTET_RETURN_IF_ERROR(bind_inputs(args, call));
  TRTET_RETURN_IF_ERROR(infer_output_shapes(args));
  TRTET_RETURN_IF_ERROR(bind_outputs(args, call));
  TRTET_RETURN_IF_ERROR(enqueue(args, call));
  return complete(call);
}

Status Session::resolve_stream(Call& call) {
  const std::optional<cudaStream_t> selected = caller_stream();
  bool green_current = false;
  if (!selected.has_value()) {
    TRTET_ASSIGN_OR_RETURN(green_current, green::is_green_context_current());
  }
  TRTET_ASSIGN_OR_RETURN(call.stream, delegate::resolve_stream(selected, green_current));
  call.facts.caller_selected = selected.has_value();

  TRTET_ASSIGN_OR_RETURN(call.facts.capturing, cuda::stream_is_capturing(call.stream));
  TRTET_ASSIGN_OR_RETURN(const int stream_device, cuda::stream_device(call.stream, call.facts.capturing));
  TRTET_CHECK_OR_RETURN(stream_device == engine_->device(), kInvalidArgument,
                        "the selected CUDA stream belongs to device %d, but the engine runs on device %d: select "
                        "a stream of device %d",
                        stream_device, engine_->device(), engine_->device());
  TRTET_CHECK_OR_RETURN(!(call.facts.capturing && engine_->enqueue_is_synchronous()), kNotSupported,
                        "this engine enqueues synchronously (weight streaming is active) and cannot be captured "
                        "into a CUDA graph");
  return Status::Ok();
}

Status Session::classify_arguments(TensorView* args, Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const TensorView& arg = args[i];
    const bool is_input = engine_->io(i).is_input;
    Binding& binding = bindings_[static_cast<std::size_t>(i)];
    binding = Binding{};
    // Null: an empty tensor, or an output the runtime allocates on resize. An aliased output is
    // bound to its input's memory, whatever it points at now.
    if (arg.data == nullptr || alias_input_of_output_[static_cast<std::size_t>(i)] >= 0) continue;
    MemoryKind kind = MemoryKind::kDevice;
    if (arg.hint != MemoryHint::kDevice) {
      TRTET_ASSIGN_OR_RETURN(kind, pointer_kinds_.classify(arg.data, engine_->device()));
    }
    if (!is_device_accessible(kind) && host_memory_is_device_accessible_) kind = MemoryKind::kManaged;
    binding.kind = kind;
    if (is_device_accessible(kind)) continue;
    (is_input ? call.facts.host_inputs : call.facts.host_outputs) = true;
    if (kind == MemoryKind::kPageableHost) call.facts.pageable = true;
  }
  for (int o = 0; o < count; ++o) {
    const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
    if (input < 0) continue;
    TRTET_CHECK_OR_RETURN(is_device_accessible(bindings_[static_cast<std::size_t>(input)].kind) &&
                              args[input].data != nullptr,
                          kInvalidArgument,
                          "output %d (\"%s\") is updated in place in input %d (\"%s\"), which must be device-resident "
                          "but is in %s memory",
                          o, engine_->io(o).name.c_str(), input, engine_->io(input).name.c_str(),
                          args[input].data == nullptr ? "no" : to_string(bindings_[static_cast<std::size_t>(input)].kind));
  }
  TRTET_ASSIGN_OR_RETURN(call.completion, decide_completion(call.facts));
  return Status::Ok();
}

Status Session::order_after_previous_call(const Call& call) {
  if (!completion_pending_ || call.stream == stats_.last_stream) return Status::Ok();
  if (call.facts.capturing) {
    // A capture cannot wait on work recorded outside it; it may start once that work is done.
    TRTET_ASSIGN_OR_RETURN(const bool done, completion_.query());
    TRTET_CHECK_OR_RETURN(done, kInvalidArgument,
                          "an earlier call of this engine is still running on another stream; synchronize it "
                          "before capturing this one");
    completion_pending_ = false;
    return Status::Ok();
  }
  TRTET_CUDA_CHECK(cudaStreamWaitEvent(call.stream, completion_.get(), 0));
  ++stats_.cross_stream_waits;
  return Status::Ok();
}

Status Session::bind_inputs(TensorView* args, Call& call) {
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    if (!engine_->io(i).is_input) continue;
    const TensorView& arg = args[i];
    Binding& binding = bindings_[static_cast<std::size_t>(i)];
    TRTET_RETURN_IF_ERROR(engine_->set_input_shape(i, arg.shape));
    binding.bytes = byte_size(arg.shape, arg.dtype);
    if (binding.bytes == 0) {
      binding.address = empty_tensor_.data();
    } else if (is_device_accessible(binding.kind)) {
      binding.address = arg.data;
    } else {
      TRTET_RETURN_IF_ERROR(ensure_device_staging(i, binding.bytes, call));
      binding.address = staging_[static_cast<std::size_t>(i)].device.data();
      binding.staged = true;
      if (binding.kind == MemoryKind::kPageableHost) TRTET_RETURN_IF_ERROR(ensure_host_staging(i, binding.bytes, call));
    }
    TRTET_RETURN_IF_ERROR(engine_->set_tensor_address(i, binding.address));
  }
  return Status::Ok();
}

Status Session::infer_output_shapes(TensorView* args) {
  TRTET_ASSIGN_OR_RETURN(const int unresolved, engine_->infer_shapes());
  TRTET_CHECK_OR_RETURN(unresolved == 0, kNotSupported,
                        "%d output shape(s) depend on data and stay unresolved after shape inference", unresolved);
  const int count = engine_->io_count();
  for (int o = 0; o < count; ++o) {
    const engine::IoDesc& io = engine_->io(o);
    if (io.is_input) continue;
    TensorView& view = args[o];
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
    Binding& binding = bindings_[static_cast<std::size_t>(o)];
    binding.bytes = byte_size(shape, io.dtype);
    TRTET_CHECK_OR_RETURN(alias_input_of_output_[static_cast<std::size_t>(o)] >= 0 || view.capacity_bytes >= binding.bytes,
                          kInvalidArgument, "output %d (\"%s\") holds %zu bytes, shape %s of %s needs %zu", o,
                          io.name.c_str(), view.capacity_bytes, shape.to_string().c_str(), to_string(io.dtype),
                          binding.bytes);
  }
  return Status::Ok();
}

Status Session::bind_outputs(TensorView* args, Call& call) {
  const int count = engine_->io_count();
  for (int o = 0; o < count; ++o) {
    if (engine_->io(o).is_input) continue;
    TensorView& view = args[o];
    Binding& binding = bindings_[static_cast<std::size_t>(o)];
    const int input = alias_input_of_output_[static_cast<std::size_t>(o)];
    if (input >= 0) {
      void* target = args[input].data;
      if (view.data != target) {
        TRTET_CHECK_OR_RETURN(view.set_data != nullptr, kInvalidArgument,
                              "output %d (\"%s\") aliases input %d, but the runtime cannot point it at the input's memory",
                              o, engine_->io(o).name.c_str(), input);
        TRTET_RETURN_IF_ERROR(view.set_data(view.context, view, target));
      }
      binding.kind = bindings_[static_cast<std::size_t>(input)].kind;
      binding.address = target;
    } else if (binding.bytes == 0) {
      binding.address = empty_tensor_.data();
    } else {
      TRTET_CHECK_OR_RETURN(view.data != nullptr, kInvalidArgument, "output %d (\"%s\") has no data pointer", o,
                            engine_->io(o).name.c_str());
      if (view.hint != MemoryHint::kDevice) {
        TRTET_ASSIGN_OR_RETURN(binding.kind, pointer_kinds_.classify(view.data, engine_->device()));
        if (!is_device_accessible(binding.kind) && host_memory_is_device_accessible_) binding.kind = MemoryKind::kManaged;
      }
      TRTET_CHECK_OR_RETURN(!(call.facts.capturing && binding.kind == MemoryKind::kPageableHost), kInvalidArgument,
                            "output %d (\"%s\") is in pageable host memory, which cannot be used while the stream is "
                            "being captured; use device or pinned host memory",
                            o, engine_->io(o).name.c_str());
      if (is_device_accessible(binding.kind)) {
        binding.address = view.data;
      } else {
        // The runtime may have placed the output only now (resize): the call completes as a
        // host-output call.
        call.facts.host_outputs = true;
        call.facts.pageable = call.facts.pageable || binding.kind == MemoryKind::kPageableHost;
        TRTET_ASSIGN_OR_RETURN(call.completion, decide_completion(call.facts));
        TRTET_RETURN_IF_ERROR(ensure_device_staging(o, binding.bytes, call));
        binding.address = staging_[static_cast<std::size_t>(o)].device.data();
        binding.staged = true;
        if (binding.kind == MemoryKind::kPageableHost) TRTET_RETURN_IF_ERROR(ensure_host_staging(o, binding.bytes, call));
      }
    }
    TRTET_RETURN_IF_ERROR(engine_->set_tensor_address(o, binding.address));
  }
  return Status::Ok();
}

Status Session::bind_aux_streams(const Call& call) {
  const int wanted = engine_->aux_stream_count();
  if (wanted == 0 || call.stream == aux_bound_for_) return Status::Ok();
  TRTET_ASSIGN_OR_RETURN(CUgreenCtx green, cuda::stream_green_context(call.stream));
  TRTET_ASSIGN_OR_RETURN(cudaStream_t* streams, aux_streams_.get(green, wanted));
  TRTET_RETURN_IF_ERROR(engine_->set_aux_streams(streams, wanted));
  aux_bound_for_ = call.stream;
  return Status::Ok();
}

Status Session::enqueue(TensorView* args, Call& call) {
  host_copies_.clear();
  TRTET_RETURN_IF_ERROR(bind_aux_streams(call));
  const int count = engine_->io_count();
  for (int i = 0; i < count; ++i) {
    const Binding& binding = bindings_[static_cast<std::size_t>(i)];
    if (!engine_->io(i).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(stage_pageable_input(i, args[i].data, call));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(binding.address, args[i].data, binding.bytes, cudaMemcpyHostToDevice, call.stream));
    }
  }
  if (call.completion == Completion::kWaitInputsConsumed) TRTET_RETURN_IF_ERROR(inputs_consumed_.record(call.stream));
  TRTET_RETURN_IF_ERROR(engine_->enqueue(call.stream));
  for (int o = 0; o < count; ++o) {
    const Binding& binding = bindings_[static_cast<std::size_t>(o)];
    if (engine_->io(o).is_input || !binding.staged) continue;
    if (binding.kind == MemoryKind::kPageableHost) {
      TRTET_RETURN_IF_ERROR(stage_pageable_output(o, args[o].data, call));
    } else {
      TRTET_CUDA_CHECK(cudaMemcpyAsync(args[o].data, binding.address, binding.bytes, cudaMemcpyDeviceToHost, call.stream));
    }
  }
  if (!call.facts.capturing) {
    TRTET_RETURN_IF_ERROR(completion_.record(call.stream));
    completion_pending_ = true;
  }
  stats_.last_stream = call.stream;
  return Status::Ok();
}

Status Session::complete(const Call& call) {
  switch (call.completion) {
    case Completion::kReturnAtOnce:
      break;
    case Completion::kWaitInputsConsumed:
      TRTET_RETURN_IF_ERROR(inputs_consumed_.synchronize());
      break;
    case Completion::kWaitOutputsReady:
      // Pageable outputs: each chunk is copied out as soon as its transfer is done, while the
      // next chunk is still in flight.
      TRTET_RETURN_IF_ERROR(copy_out_pageable_outputs());
      TRTET_RETURN_IF_ERROR(completion_.synchronize());
      break;
  }
  stats_.last_completion = call.completion;
  ++stats_.calls;
  return Status::Ok();
}

std::size_t Session::chunk_bytes(std::size_t bytes) noexcept {
  // Enough chunks that the host copy of one overlaps the transfer of another, none so small
  // that per-copy overhead shows.
  constexpr std::size_t kMinChunk = 1u << 20;
  constexpr std::size_t kChunks = 64;
  return std::max(kMinChunk, (bytes + kChunks - 1) / kChunks);
}

Status Session::stage_pageable_input(int index, const void* source, const Call& call) {
  const Binding& binding = bindings_[static_cast<std::size_t>(index)];
  auto* host = static_cast<unsigned char*>(staging_[static_cast<std::size_t>(index)].host_data());
  auto* device = static_cast<unsigned char*>(binding.address);
  const auto* from = static_cast<const unsigned char*>(source);
  const std::size_t chunk = chunk_bytes(binding.bytes);
  const std::size_t chunks = (binding.bytes + chunk - 1) / chunk;
  // Worker w copies chunks w, w + P, ... and queues each one's transfer as soon as it is copied,
  // so the transfers run while the other chunks are still being copied.
  const int parallelism = chunks > 1 ? HostCopyPool::shared().parallelism() : 1;
  std::mutex error_mutex;
  cudaError_t first_error = cudaSuccess;
  auto job = [&](int worker) {
    for (std::size_t c = static_cast<std::size_t>(worker); c < chunks; c += static_cast<std::size_t>(parallelism)) {
      const std::size_t offset = c * chunk;
      const std::size_t length = std::min(chunk, binding.bytes - offset);
      std::memcpy(host + offset, from + offset, length);
      const cudaError_t error =
          cudaMemcpyAsync(device + offset, host + offset, length, cudaMemcpyHostToDevice, call.stream);
      if (error != cudaSuccess) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error == cudaSuccess) first_error = error;
        return;
      }
    }
  };
  if (parallelism == 1) {
    job(0);
  } else {
    HostCopyPool::shared().run(job, engine_->device());
  }
  TRTET_CUDA_CHECK(first_error);
  return Status::Ok();
}

Status Session::stage_pageable_output(int index, void* destination, const Call& call) {
  const Binding& binding = bindings_[static_cast<std::size_t>(index)];
  auto* host = static_cast<unsigned char*>(staging_[static_cast<std::size_t>(index)].host_data());
  const auto* device = static_cast<const unsigned char*>(binding.address);
  auto* to = static_cast<unsigned char*>(destination);
  const std::size_t chunk = chunk_bytes(binding.bytes);
  for (std::size_t offset = 0; offset < binding.bytes; offset += chunk) {
    std::size_t length = std::min(chunk, binding.bytes - offset);
    const bool last_event = host_copies_.size() + 1 == chunk_events_.size();
    if (last_event) length = binding.bytes - offset;  // out of events: the rest in one piece
    TRTET_CUDA_CHECK(cudaMemcpyAsync(host + offset, device + offset, length, cudaMemcpyDeviceToHost, call.stream));
    const std::size_t event = host_copies_.size();
    TRTET_RETURN_IF_ERROR(chunk_events_[event].record(call.stream));
    host_copies_.push_back(HostCopy{to + offset, host + offset, length, event});
    if (last_event) break;
  }
  return Status::Ok();
}

Status Session::copy_out_pageable_outputs() {
  // Worker w takes chunks w, w + P, ...: each waits for its chunk's transfer, then copies it out
  // while later chunks are still in flight.
  const std::size_t count = host_copies_.size();
  const int parallelism = count > 1 ? HostCopyPool::shared().parallelism() : 1;
  std::mutex error_mutex;
  Status first_error;
  auto job = [&](int worker) {
    for (std::size_t c = static_cast<std::size_t>(worker); c < count; c += static_cast<std::size_t>(parallelism)) {
      const HostCopy& copy = host_copies_[c];
      Status waited = chunk_events_[copy.event].synchronize();
      if (!waited.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = std::move(waited);
        return;
      }
      std::memcpy(copy.destination, copy.source, copy.bytes);
    }
  };
  if (parallelism == 1) {
    job(0);
  } else {
    HostCopyPool::shared().run(job, engine_->device());
  }
  return first_error;
}

Status Session::ensure_device_staging(int index, std::size_t bytes, const Call& call) {
  cuda::DeviceBuffer& buffer = staging_[static_cast<std::size_t>(index)].device;
  // Frees of an outgrown buffer are ordered on this call's stream, which already waits for the
  // previous call (order_after_previous_call).
  buffer.set_stream(call.stream);
  if (buffer.size() >= bytes) return Status::Ok();
  TRTET_CHECK_OR_RETURN(!call.facts.capturing, kInvalidArgument,
                        "binding %d (\"%s\") needs %zu bytes of device staging but the session holds %zu, and nothing "
                        "may be allocated while the stream is being captured: run the call once before capturing",
                        index, engine_->io(index).name.c_str(), bytes, buffer.size());
  const std::size_t capacity = grown_capacity(buffer.size(), bytes);
  buffer.reset();
  TRTET_ASSIGN_OR_RETURN(buffer, cuda::DeviceBuffer::allocate(capacity, call.stream));
  ++stats_.staging_grows;
  return Status::Ok();
}

Status Session::ensure_host_staging(int index, std::size_t bytes, const Call& call) {
  Staging& staging = staging_[static_cast<std::size_t>(index)];
  staging.host.set_stream(call.stream);
  if (staging.host_size() >= bytes) return Status::Ok();
  TRTET_CHECK_OR_RETURN(!call.facts.capturing, kInvalidArgument,
                        "binding %d (\"%s\") needs host staging, which cannot be allocated during capture", index,
                        engine_->io(index).name.c_str());
  const std::size_t capacity = grown_capacity(staging.host_size(), bytes);
  // Not in use: the previous call waited for its host data before returning.
  if (host_pool_) {
    staging.host.reset();
    TRTET_ASSIGN_OR_RETURN(staging.host, cuda::DeviceBuffer::allocate_from(host_pool_.get(), capacity, call.stream));
  } else {
    staging.host_fallback.reset();
    TRTET_ASSIGN_OR_RETURN(staging.host_fallback, cuda::PinnedBuffer::allocate(capacity));
  }
  ++stats_.staging_grows;
  return Status::Ok();
}

SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Session::destroy() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  release();
}

void Session::release() noexcept {
  if (engine_ == nullptr) return;
  {
    cuda::DeviceGuard device(engine_->device());
    if (completion_pending_) TRTET_CUDA_WARN(cudaEventSynchronize(completion_.get()));  // our own work only
    if (private_stream_ != nullptr) {
      // Every use is complete: free in order on the session's own stream, not the caller's
      // (which may already be destroyed).
      for (Staging& staging : staging_) {
        staging.device.set_stream(private_stream_);
        staging.device.reset();
        staging.host.set_stream(private_stream_);
        staging.host.reset();
        staging.host_fallback.reset();
      }
      empty_tensor_.set_stream(private_stream_);
      empty_tensor_.reset();
    }
    aux_streams_.reset();
    engine_.reset();
    if (private_stream_ != nullptr) TRTET_CUDA_WARN(cudaStreamDestroy(private_stream_));
    host_pool_.reset();
    private_stream_ = nullptr;
    inputs_consumed_.reset();
    completion_.reset();
    chunk_events_.clear();
  }
  staging_.clear();
  bindings_.clear();
  initialized_ = false;
  completion_pending_ = false;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
