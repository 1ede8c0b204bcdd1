#include "contract_fuzz/call_args.h"

#include "contract_fuzz/rng.h"
#include "cuda/check.h"
#include "engines/kernels.h"

namespace trtet_test::fuzz {
namespace {

ex::Status resize_callback(void* context, ex::delegate::TensorView& view, const ex::Shape& shape) {
  auto* tensor = static_cast<TensorState*>(context);
  ++tensor->resize_calls;
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * ex::element_size(view.dtype);
  TRTET_CHECK_OR_RETURN(bytes <= tensor->capacity, kInvalidArgument,
                        "fuzz tensor: resize to %s needs %zu bytes, capacity is %zu", shape.to_string().c_str(), bytes,
                        tensor->capacity);
  tensor->shape = shape;
  view.shape = shape;
  view.data = tensor->data;
  view.capacity_bytes = tensor->capacity;
  return ex::Status::Ok();
}

ex::Status set_data_callback(void* context, ex::delegate::TensorView& view, void* data) {
  auto* tensor = static_cast<TensorState*>(context);
  ++tensor->set_data_calls;
  tensor->data = data;
  view.data = data;
  return ex::Status::Ok();
}

}  // namespace

std::vector<float> draw_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  fill_random(values, mix(seed, 0x5eed));
  return values;
}

std::vector<float> draw_dyadic(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  Rng draws(mix(seed, 0xd1ad1c));
  for (float& v : values) {
    const std::uint64_t r = draws.next();
    const int k = 1 + static_cast<int>(r % 16);  // 1..16
    v = static_cast<float>((r >> 32) & 1 ? k : -k) * 0.25f;
  }
  return values;
}

ex::Result<std::unique_ptr<SharedCache>> SharedCache::make(const InputShape& shape, Mem mem, std::uint64_t seed,
                                                           cudaStream_t io) {
  auto cache = std::make_unique<SharedCache>();
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  TRTET_ASSIGN_OR_RETURN(cache->buffer, Buffer::allocate(mem, std::max<std::size_t>(n * sizeof(float), 1)));
  cache->expected = draw_dyadic(n, seed);
  TRTET_RETURN_IF_ERROR(cache->buffer->write(cache->expected.data(), n * sizeof(float), io));
  return cache;
}

void SharedCache::apply(const std::vector<float>& x) {
  for (std::size_t i = 0; i < expected.size() && i < x.size(); ++i) expected[i] = negate ? x[i] - expected[i] : expected[i] + x[i];
  ++updates;
}

ex::Result<std::unique_ptr<CallArgs>> CallArgs::prepare(const EngineModel& model, const CallPlan& plan,
                                                        BufferPool& pool, cudaStream_t io, const SharedCache* cache) {
  std::unique_ptr<CallArgs> args(new CallArgs(model, plan));
  args->pool_ = &pool;
  TRTET_CHECK_OR_RETURN(!plan.shared_cache || (cache != nullptr && model.cache_binding() >= 0), kInvalidArgument,
                        "a shared-cache call needs the session's cache and an in-place engine");
  args->cache_ = plan.shared_cache ? cache : nullptr;
  args->sources_.assign(static_cast<std::size_t>(model.io_count()), nullptr);
  const int count = model.io_count();
  TRTET_CHECK_OR_RETURN(static_cast<int>(plan.mems.size()) == count, kInvalidArgument,
                        "plan has %zu memory kinds for %d bindings", plan.mems.size(), count);
  const std::size_t input_elements = static_cast<std::size_t>(plan.shape.numel());
  args->inputs_.resize(static_cast<std::size_t>(count));
  for (int b = 0; b < count; ++b) {
    const BindingRole& role = model.role(b);
    std::size_t bytes = input_elements * role.element_bytes();
    ex::Shape shape{plan.shape.rows, plan.shape.cols};
    if (!role.input) {
      shape = model.output_shape(b, plan.shape);
      bytes = static_cast<std::size_t>(shape.numel()) * role.element_bytes();
      if (role.scalar && plan.stale_output_shapes) {
        shape = ex::Shape{2};
      } else if (role.scalar && (plan.data_seed & 1) != 0) {
        shape = ex::Shape{};  // a 0-d tensor: accepted where the engine reports [1]
      } else if (plan.stale_output_shapes) {
        shape = ex::Shape{plan.shape.rows + 1, plan.shape.cols};
      }
    }
    auto tensor = std::make_unique<TensorState>();
    tensor->shape = shape;
    if (args->is_shared_cache(b)) {
      TRTET_CHECK_OR_RETURN(cache->buffer->capacity() >= bytes, kInvalidArgument,
                            "the shared cache holds %zu bytes, the call's input %zu", cache->buffer->capacity(), bytes);
      tensor->buffer = cache->buffer.get();
      tensor->data = tensor->buffer->data();
      tensor->capacity = tensor->buffer->capacity();
    } else if (!(bytes == 0 && plan.null_empty)) {
      TRTET_ASSIGN_OR_RETURN(tensor->buffer, pool.lend(plan.mems[static_cast<std::size_t>(b)], bytes));
      tensor->data = tensor->buffer->data();
      tensor->capacity = tensor->buffer->capacity();
    }
    args->bytes_.push_back(bytes);
    args->initial_shapes_.push_back(shape);
    args->tensors_.push_back(std::move(tensor));
  }
  TRTET_RETURN_IF_ERROR(args->write_new_inputs(plan.data_seed, io, /*queue=*/plan.caller_spin_us > 0, /*stale=*/true));
  TRTET_RETURN_IF_ERROR(args->repoison(io));
  return args;
}

bool CallArgs::queued(int binding) const {
  const TensorState& t = tensor(binding);
  return plan_.caller_spin_us > 0 && model_->role(binding).input && !is_shared_cache(binding) && t.buffer != nullptr &&
         t.buffer->mem() != Mem::kPageable && bytes(binding) > 0;
}

ex::Status CallArgs::queue_caller_work(cudaStream_t stream) {
  if (plan_.caller_spin_us <= 0) return ex::Status::Ok();
  TRTET_RETURN_IF_ERROR(launch_spin(plan_.caller_spin_us * 1000, 1, stream));
  for (int b = 0; b < model_->io_count(); ++b) {
    Buffer* source = sources_[static_cast<std::size_t>(b)];
    if (source == nullptr) continue;
    TRTET_CUDA_CHECK(cudaMemcpyAsync(tensor(b).buffer->data(), source->data(), bytes(b), cudaMemcpyDefault, stream));
  }
  return ex::Status::Ok();
}

ex::Status CallArgs::requeue(std::uint64_t data_seed, cudaStream_t stream, cudaStream_t io) {
  // No other values first: the previous call may still be reading these buffers (its stream
  // orders the queued writes after it).
  TRTET_RETURN_IF_ERROR(write_new_inputs(data_seed, io, /*queue=*/true, /*stale=*/false));
  return queue_caller_work(stream);
}

bool CallArgs::device_only() const {
  for (int b = 0; b < model_->io_count(); ++b) {
    const TensorState& t = tensor(b);
    if (t.buffer != nullptr && t.buffer->mem() != Mem::kDevice && t.buffer->mem() != Mem::kManaged) return false;
  }
  return true;
}

std::vector<const Buffer*> CallArgs::buffers() const {
  std::vector<const Buffer*> all;
  for (int b = 0; b < model_->io_count(); ++b) {
    if (tensor(b).buffer != nullptr) all.push_back(tensor(b).buffer);
    if (sources_[static_cast<std::size_t>(b)] != nullptr) all.push_back(sources_[static_cast<std::size_t>(b)]);
  }
  return all;
}

ex::Status CallArgs::refresh(std::uint64_t data_seed, cudaStream_t io) {
  TRTET_RETURN_IF_ERROR(write_new_inputs(data_seed, io));
  return repoison(io);
}

ex::Status CallArgs::refresh_data(std::uint64_t data_seed, cudaStream_t io) {
  TRTET_RETURN_IF_ERROR(write_new_inputs(data_seed, io));
  return poison_outputs(io);
}

ex::Status CallArgs::write_new_inputs(std::uint64_t data_seed, cudaStream_t io, bool queue, bool stale) {
  for (int b = 0; b < model_->io_count(); ++b) {
    if (!model_->role(b).input) continue;
    std::vector<float>& values = inputs_[static_cast<std::size_t>(b)];
    // Floats; a binding of another dtype takes their bytes (as many words as cover it).
    const std::size_t words = (bytes(b) + sizeof(float) - 1) / sizeof(float);
    if (is_shared_cache(b)) {
      values = cache_->expected;  // as earlier calls left it
    } else if (plan_.shared_cache) {
      values = draw_dyadic(words, mix(data_seed, static_cast<std::uint64_t>(b)));
    } else {
      values = draw_floats(words, mix(data_seed, static_cast<std::uint64_t>(b)));
    }
  }
  return write_inputs(io, queue, stale);
}

ex::Status CallArgs::repoison(cudaStream_t io) {
  TRTET_RETURN_IF_ERROR(poison_outputs(io));
  for (int b = 0; b < model_->io_count(); ++b) {
    TensorState& t = tensor(b);
    t.data = t.buffer != nullptr ? t.buffer->data() : nullptr;
    t.shape = initial_shape(b);
  }
  build_views();
  return ex::Status::Ok();
}

ex::Status CallArgs::write_inputs(cudaStream_t io, bool queue, bool stale) {
  for (int b = 0; b < model_->io_count(); ++b) {
    Buffer*& source = sources_[static_cast<std::size_t>(b)];
    source = nullptr;
    if (!model_->role(b).input || tensor(b).buffer == nullptr || is_shared_cache(b)) continue;
    const std::vector<float>& values = inputs_[static_cast<std::size_t>(b)];
    if (!(queue && queued(b))) {
      TRTET_RETURN_IF_ERROR(tensor(b).buffer->write(values.data(), bytes(b), io));
      continue;
    }
    // Other values until the caller's queued write lands (a new source each time: an earlier
    // queued copy may not have run yet).
    if (stale) {
      const std::vector<float> other = draw_floats(values.size(), mix(plan_.data_seed, 0x57a1e + static_cast<std::uint64_t>(b)));
      TRTET_RETURN_IF_ERROR(tensor(b).buffer->write(other.data(), bytes(b), io));
    }
    TRTET_ASSIGN_OR_RETURN(source, pool_->lend(Mem::kDevice, bytes(b)));
    TRTET_RETURN_IF_ERROR(source->write(values.data(), bytes(b), io));
  }
  return ex::Status::Ok();
}

ex::Status CallArgs::poison_outputs(cudaStream_t io) {
  for (int b = 0; b < model_->io_count(); ++b) {
    if (model_->role(b).input || tensor(b).buffer == nullptr) continue;
    TRTET_RETURN_IF_ERROR(tensor(b).buffer->fill(kPoisonByte, tensor(b).buffer->capacity(), io));
  }
  return ex::Status::Ok();
}

void CallArgs::build_views() {
  views_.assign(static_cast<std::size_t>(model_->io_count()), ex::delegate::TensorView{});
  for (int b = 0; b < model_->io_count(); ++b) {
    TensorState& t = tensor(b);
    ex::delegate::TensorView& view = views_[static_cast<std::size_t>(b)];
    view.data = t.data;
    view.capacity_bytes = t.capacity;
    view.shape = t.shape;
    view.dtype = model_->role(b).dtype;
    const Mem mem = plan_.mems[static_cast<std::size_t>(b)];
    const bool hint = b < static_cast<int>(plan_.hints.size()) && plan_.hints[static_cast<std::size_t>(b)];
    if (t.buffer != nullptr && t.buffer->mem() != mem) {
      view.hint = ex::delegate::MemoryHint::kUnknown;  // a swapped-in probe buffer: let the delegate look
    } else if (hint) {
      view.hint = is_host(mem) ? ex::delegate::MemoryHint::kHost : ex::delegate::MemoryHint::kDevice;
    }
    if (!model_->role(b).input) {
      view.resize = &resize_callback;
      view.set_data = &set_data_callback;
    }
    view.context = &t;
  }
}

bool CallArgs::host_binding(int binding) const {
  const TensorState& t = tensor(binding);
  return t.buffer != nullptr && is_host(t.buffer->mem());
}

bool CallArgs::host_inputs() const {
  for (int b = 0; b < model_->io_count(); ++b) {
    if (model_->role(b).input && host_binding(b)) return true;
  }
  return false;
}

bool CallArgs::host_outputs() const {
  for (int b = 0; b < model_->io_count(); ++b) {
    const BindingRole& role = model_->role(b);
    if (!role.input && role.aliased_input < 0 && host_binding(b)) return true;
  }
  return false;
}

ex::Status CallArgs::swap_buffer(int binding, Buffer* buffer, cudaStream_t io) {
  TensorState& t = tensor(binding);
  TRTET_CHECK_OR_RETURN(buffer != nullptr && buffer->capacity() >= bytes(binding), kInvalidArgument,
                        "swap_buffer: the buffer is too small");
  t.buffer = buffer;
  t.capacity = buffer->capacity();
  if (model_->role(binding).input) {
    TRTET_RETURN_IF_ERROR(buffer->write(inputs_[static_cast<std::size_t>(binding)].data(), bytes(binding), io));
  }
  return repoison(io);
}

}  // namespace trtet_test::fuzz
