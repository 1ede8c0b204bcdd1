#include "execute.h"

#include "fault.h"
#include "plan_set_serving.h"

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <torch_tensorrt/executorch/Profiling.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

namespace trtet_triton {

using ::executorch::extension::TensorPtr;

// ---- execute ----

::executorch::aten::Device device_of(TRITONSERVER_MemoryType type, std::int64_t id) {
  if (type == TRITONSERVER_MEMORY_GPU) {
    return ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA,
                                      static_cast<::executorch::runtime::etensor::DeviceIndex>(id));
  }
  return ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
}

std::vector<::executorch::aten::SizesType> sizes_of(const std::vector<std::int64_t>& dims) {
  return std::vector<::executorch::aten::SizesType>(dims.begin(), dims.end());
}

// Input i of `request`: found, its type, its shape (against the program's, or its bound for a
// dynamic input: Note [dynamic shapes]) and its bytes checked, before any memory is taken for it.
TRITONSERVER_Error* read_input(const ModelState& model, TRITONBACKEND_Request* request, const std::size_t i,
                               const std::int64_t rows, InputView& view) {
  const IoSpec& spec = model.inputs[i];
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, spec.name.c_str(), &view.input));
  const char* input_name = nullptr;
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
  TRTET_TRITON_RETURN_IF_ERROR(
      TRITONBACKEND_InputProperties(view.input, &input_name, &type, &view.shape, &view.dims, &view.bytes, &view.buffers));
  if (type != spec.type->triton) {
    // Triton's frontend refuses a type other than the config's first; this names both if one gets here.
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("input '%s' is %s; the program takes %s", spec.name.c_str(),
                                                        config_name_of(type), spec.type->config));
  }
  const std::string bad_shape = spec.check_shape(view.shape, view.dims);
  if (!bad_shape.empty()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, format("input '%s' %s", spec.name.c_str(), bad_shape.c_str()));
  }
  std::uint64_t expected = spec.type->size;
  for (std::uint32_t d = 0; d < view.dims; ++d) expected *= static_cast<std::uint64_t>(view.shape[d]);  // each within the bound
  if (view.bytes != expected) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("input '%s' has %llu bytes; its shape %s takes %llu", spec.name.c_str(),
                        static_cast<unsigned long long>(view.bytes),
                        dims_text(std::vector<std::int64_t>(view.shape, view.shape + view.dims)).c_str(),
                        static_cast<unsigned long long>(expected)));
  }
  // Batched (Note [batching requests]), every input carries the request's batch size in dim 0.
  if (model.max_batch > 0 && i > 0 && rows >= 0 && view.dims > 0 && view.shape[0] != rows) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("input '%s' has %lld rows in dim 0 and input '%s' %lld: a request's inputs share its batch size",
                        spec.name.c_str(), static_cast<long long>(view.shape[0]), model.inputs[0].name.c_str(),
                        static_cast<long long>(rows)));
  }
  return nullptr;
}

TRITONSERVER_Error* gather_input(const IoSpec& spec, TRITONBACKEND_Input* input, const std::uint32_t buffers,
                                 const std::uint64_t bytes, std::vector<unsigned char>& scratch, bool& from_gpu) {
  if (buffers == 0 && bytes > 0) {
    // Triton's core checks an input's bytes against its shape before a backend sees the request,
    // so no client can send this: the request is refused as the server's fault, and logged.
    const std::string message = format("input '%s' reports %llu bytes in 0 buffers, which Triton's core does not hand "
                                       "a backend (it checks an input's bytes against its shape first); the request "
                                       "is refused", spec.name.c_str(), static_cast<unsigned long long>(bytes));
    log(TRITONSERVER_LOG_ERROR, message);
    return error(TRITONSERVER_ERROR_INTERNAL, message);
  }
  scratch.resize(bytes);
  std::uint64_t offset = 0;
  from_gpu = false;
  for (std::uint32_t b = 0; b < buffers; ++b) {
    const void* piece = nullptr;
    std::uint64_t piece_bytes = 0;
    TRITONSERVER_MemoryType piece_memory = TRITONSERVER_MEMORY_CPU;
    std::int64_t piece_id = 0;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &piece, &piece_bytes, &piece_memory, &piece_id));
    if (piece_bytes > bytes - offset) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("input '%s' has more bytes in its %u buffers than its shape takes (%llu)", spec.name.c_str(),
                          buffers, static_cast<unsigned long long>(bytes)));
    }
    if (piece_bytes == 0) continue;
    if (piece == nullptr) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("input '%s': buffer %u of %llu bytes has no data", spec.name.c_str(),
                                                          b, static_cast<unsigned long long>(piece_bytes)));
    }
    if (piece_memory == TRITONSERVER_MEMORY_GPU) {
      from_gpu = true;
      const cudaError_t c = cudaMemcpy(scratch.data() + offset, piece, piece_bytes, cudaMemcpyDeviceToHost);
      if (c != cudaSuccess) {
        (void)cudaGetLastError();
        return error(TRITONSERVER_ERROR_INTERNAL, format("gathering input '%s' from the GPU: %s", spec.name.c_str(), cudaGetErrorString(c)));
      }
    } else {
      std::memcpy(scratch.data() + offset, piece, piece_bytes);  // host (or pinned) memory: no CUDA call
    }
    offset += piece_bytes;
  }
  if (offset != bytes) {  // all of it, or the scratch would hold an earlier request's bytes
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("input '%s' has %llu bytes in its %u buffers; its shape takes %llu", spec.name.c_str(),
                        static_cast<unsigned long long>(offset), buffers, static_cast<unsigned long long>(bytes)));
  }
  return nullptr;
}

TRITONSERVER_Error* check_request(const ModelState& model, TRITONBACKEND_Request* request,
                                  std::vector<std::vector<std::int64_t>>& shapes) {
  std::uint32_t input_count = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &input_count));
  if (input_count != model.inputs.size()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("the request has %u inputs; model '%s' takes %zu", input_count, model.name.c_str(), model.inputs.size()));
  }
  shapes.resize(model.inputs.size());
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    InputView view;
    const std::int64_t rows = i > 0 && !shapes[0].empty() ? shapes[0][0] : -1;
    TRTET_TRITON_RETURN_IF_ERROR(read_input(model, request, i, rows, view));
    shapes[i].assign(view.shape, view.shape + view.dims);
  }
  return nullptr;
}

TRITONSERVER_Error* call_method(InstanceState& state, const bool wait,
                                std::optional<etr::Result<std::vector<etr::EValue>>>& called,
                                std::uint64_t& compute_start, std::uint64_t& compute_end) {
  ModelState& model = *state.model;
  // A model following a plan set takes its stream now, at the call: the set's current plan's
  // (a switch moves this model's next call; this one keeps the stream it took).
  if (state.set != nullptr) {
    auto stream = state.set->stream(state.set_model);
    if (!stream.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "the plan set's stream: " + stream.error().message());
    state.stream = *stream;
  }
  compute_start = now_ns();
  state.points.outputs = compute_start;
  take_executorch_errors();
  // One request in gpu_time_every has its GPU time measured; the others run with the tracer at
  // kProfileMethodOnly, where the delegate records no events (Note [engine GPU time]).
  state.timed = false;
  if (state.gpu_times != nullptr) {
    state.timed = state.calls++ % model.parameters.gpu_time_every == 0;
    state.gpu_times->set_event_tracer_profiling_level(state.timed ? etr::EventTracerProfilingLevel::kProfileAllEvents
                                                                  : etr::EventTracerProfilingLevel::kProfileMethodOnly);
    if (state.timed) state.gpu_times->reset();
  }
  {
    et::CudaStreamGuard guard(state.stream);
    called.emplace(state.module->execute(model.parameters.method));
  }
  etr::Result<std::vector<etr::EValue>>& result = *called;
  state.points.execute = now_ns();
  if (state.gpu_times != nullptr) state.points.method_ns = state.gpu_times->take_method_ns();
  if (!result.ok()) {
    // What the call left on the stream settles first: a sticky error there poisons the process
    // (Note [the fault domain]); any other stays this request's.
    const cudaError_t after = cudaStreamSynchronize(state.stream);
    (void)cudaGetLastError();
    const std::string what = executorch_failure(format("model '%s' instance '%s': execute", model.name.c_str(), state.name.c_str()), result.error());
    if (poison_if_sticky(after, what)) {
      return error(TRITONSERVER_ERROR_UNAVAILABLE, format("%s; then its stream: %s (%s); this process's CUDA context is lost",
                                                          what.c_str(), cudaGetErrorString(after), cudaGetErrorName(after)));
    }
    // The delegate refuses what the caller got wrong (a shape outside its engine's profile) as
    // InvalidArgument: the client sees that code, with the delegate's message from its log.
    const TRITONSERVER_Error_Code code =
        result.error() == etr::Error::InvalidArgument ? TRITONSERVER_ERROR_INVALID_ARG : TRITONSERVER_ERROR_INTERNAL;
    return error(code, what);
  }
  const cudaError_t synced = wait ? state.waiter->wait(state.stream) : cudaSuccess;  // Note [waiting for the stream]
  state.points.stream_wait = now_ns();
  if (synced != cudaSuccess) {
    compute_end = now_ns();
    const std::string what = format("model '%s' instance '%s': the call's stream failed", model.name.c_str(), state.name.c_str());
    (void)cudaGetLastError();
    const bool lost = poison_if_sticky(synced, what);
    return error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                 format("%s: %s (%s)%s", what.c_str(), cudaGetErrorString(synced), cudaGetErrorName(synced),
                        lost ? "; this process's CUDA context is lost" : ""));
  }
  return nullptr;
}

TRITONSERVER_Error* output_device_scratch(InstanceState& state, const std::size_t o, void*& buffer) {
  const IoSpec& spec = state.model->outputs[o];
  state.output_device_scratch.resize(state.model->outputs.size(), nullptr);
  void*& scratch = state.output_device_scratch[o];
  if (scratch == nullptr) {
    const cudaError_t c = cudaMalloc(&scratch, std::max<std::size_t>(spec.bytes, 1));
    if (c != cudaSuccess) {
      scratch = nullptr;
      (void)cudaGetLastError();
      return error(TRITONSERVER_ERROR_INTERNAL, format("device memory for output '%s' (%zu bytes): %s", spec.name.c_str(),
                                                       spec.bytes, cudaGetErrorString(c)));
    }
  }
  buffer = scratch;
  return nullptr;
}

// One request, start to end: inputs bound in place (or staged by the delegate from host memory),
// outputs written into the response's buffers, the call on the instance's stream under the guard.
TRITONSERVER_Error* run_request(InstanceState& state, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                std::uint64_t& compute_start, std::uint64_t& compute_end) {
  ModelState& model = *state.model;
  std::vector<TensorPtr> keep;  // the tensors the method reads and writes, alive until the call is done
  keep.reserve(model.inputs.size() + model.outputs.size());

  std::uint32_t input_count = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &input_count));
  if (input_count != model.inputs.size()) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("the request has %u inputs; model '%s' takes %zu", input_count, model.name.c_str(), model.inputs.size()));
  }
  state.input_scratch.resize(model.inputs.size());
  std::int64_t first_rows = -1;  // input 0's dim 0 (Note [batching requests])
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const IoSpec& spec = model.inputs[i];
    InputView view;
    TRTET_TRITON_RETURN_IF_ERROR(read_input(model, request, i, first_rows, view));
    TRITONBACKEND_Input* input = view.input;
    const std::int64_t* shape = view.shape;
    const std::uint32_t dims = view.dims;
    const std::uint64_t bytes = view.bytes;
    const std::uint32_t buffers = view.buffers;
    // Batched, the request's batch size is its inputs' dim 0 (Note [batching requests]).
    if (i == 0) {
      first_rows = dims > 0 ? shape[0] : -1;
      state.rows = model.max_batch > 0 && dims > 0 ? static_cast<std::uint64_t>(shape[0]) : 1;
    }
    const void* data = nullptr;
    std::uint64_t data_bytes = 0;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
    std::int64_t memory_id = state.device;
    if (buffers == 1) {
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, 0, &data, &data_bytes, &memory, &memory_id));
    }
    if (memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("input '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                          static_cast<long long>(memory_id), state.name.c_str(), state.device));
    }
    // In pieces, or on the GPU for an input the program plans in host memory: gathered into host
    // memory of the input's own (at most the program's bytes for it).
    if (buffers != 1 || (spec.planned && memory == TRITONSERVER_MEMORY_GPU)) {
      std::vector<unsigned char>& scratch = state.input_scratch[i];
      bool from_gpu = false;
      TRTET_TRITON_RETURN_IF_ERROR(gather_input(spec, input, buffers, bytes, scratch, from_gpu));
      if (TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE)) {
        log(TRITONSERVER_LOG_VERBOSE, format("model '%s': input '%s' (%llu bytes) came in %u piece(s) from %s memory: "
                                             "gathered into host memory", model.name.c_str(), spec.name.c_str(),
                                             static_cast<unsigned long long>(bytes), buffers,
                                             from_gpu ? "GPU" : "host"));
      }
      data = scratch.data();
      memory = TRITONSERVER_MEMORY_CPU;
    }
    keep.push_back(::executorch::extension::from_blob(const_cast<void*>(data),
                                                      std::vector<::executorch::aten::SizesType>(shape, shape + dims),
                                                      spec.type->et, device_of(memory, memory_id)));
    const etr::Error set = state.module->set_input(model.parameters.method, etr::EValue(*keep.back()), i);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting input '" + spec.name + "'", set));
  }

  state.points.inputs = now_ns();

  // Outputs: the ones the client asked for (all when it named none). A static output is written into
  // its response buffer in place; a dynamic one (its shape known only once the call ran) into a
  // scratch of its bound, and a planned one into the program's memory: both are copied into a
  // response buffer of the shape they came out with, after the call (late).
  std::uint32_t requested = 0;
  TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &requested));
  // Which outputs were asked for, by index (no allocation: a program has few outputs).
  std::vector<bool>& wanted = state.wanted_outputs;
  wanted.assign(model.outputs.size(), requested == 0);
  for (std::uint32_t r = 0; r < requested; ++r) {
    const char* output_name = nullptr;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, r, &output_name));
    for (std::size_t o = 0; o < model.outputs.size(); ++o) {
      if (model.outputs[o].name == output_name) wanted[o] = true;
    }
  }
  state.output_scratch.resize(model.outputs.size());
  bool late = false;
  // Every output the call writes is host memory the backend handed it (Note [host outputs need no
  // wait]): no planned output, none on the GPU.
  bool host_outputs_only = !model.outputs.empty();
  for (std::size_t o = 0; o < model.outputs.size(); ++o) {
    const IoSpec& spec = model.outputs[o];
    void* buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
    std::int64_t memory_id = state.device;
    if (spec.planned || spec.dynamic()) late = late || wanted[o];
    if (spec.planned) {  // the program's own memory
      host_outputs_only = false;
      continue;
    }
    if (wanted[o] && !spec.dynamic()) {
      TRITONBACKEND_Output* output = nullptr;
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, spec.name.c_str(), spec.type->triton,
                                                                spec.dims.data(), static_cast<std::uint32_t>(spec.dims.size())));
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, spec.bytes, &memory, &memory_id));
      if (memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("output '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                            static_cast<long long>(memory_id), state.name.c_str(), state.device));
      }
    }
    if (buffer == nullptr && wanted[o] && spec.dynamic()) {
      // Dynamic and asked for: written where the response will likely be (the client's CUDA shared
      // memory: device memory of the instance's own; else host), so a device response stays on the
      // device, then copied into the response once its shape is known.
      std::size_t size = 0;
      TRITONSERVER_MemoryType preferred = TRITONSERVER_MEMORY_CPU;
      std::int64_t preferred_id = 0;
      TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputBufferProperties(request, spec.name.c_str(), &size, &preferred, &preferred_id);
      if (e != nullptr) {
        TRITONSERVER_ErrorDelete(e);
        preferred = TRITONSERVER_MEMORY_CPU;
      }
      if (preferred == TRITONSERVER_MEMORY_GPU && preferred_id == state.device) {
        TRTET_TRITON_RETURN_IF_ERROR(output_device_scratch(state, o, buffer));
        memory = TRITONSERVER_MEMORY_GPU;
        memory_id = state.device;
      }
    }
    if (buffer == nullptr) {
      // Dynamic, or not asked for: the program writes it into host memory of the output's own (its
      // bound's bytes, the program's figure), which the response never sees directly.
      std::vector<unsigned char>& scratch = state.output_scratch[o];
      scratch.resize(spec.bytes);
      buffer = scratch.data();
      memory = TRITONSERVER_MEMORY_CPU;
    }
    if (memory == TRITONSERVER_MEMORY_GPU) host_outputs_only = false;
    keep.push_back(::executorch::extension::from_blob(buffer, sizes_of(spec.dims), spec.type->et, device_of(memory, memory_id)));
    const etr::Error set = state.module->set_output(model.parameters.method, etr::EValue(*keep.back()), o);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting output '" + spec.name + "'", set));
  }

  // Note [host outputs need no wait]
  // --------------------------------
  // The delegate returns from a call whose outputs are all in host memory with them written (the
  // contract: host outputs are ready on return, under a guard too), so its engine and copies are
  // done: a wait for the stream here would find it idle and cost the request a synchronize (2.3 to
  // 3.4 us in S42 and S43). Any output on the GPU, a planned one (the program's memory, possibly the GPU's)
  // or one copied late is waited for as before.
  const bool wait = !(host_outputs_only && !late);
  std::optional<etr::Result<std::vector<etr::EValue>>> called;
  TRTET_TRITON_RETURN_IF_ERROR(call_method(state, wait, called, compute_start, compute_end));
  etr::Result<std::vector<etr::EValue>>& result = *called;
  // Late outputs: the call is done (its stream synchronized), so their shapes are known and their
  // bytes written; each goes into a response buffer of its shape, copied on the instance's stream
  // (on its partition), which is waited for once more.
  bool copied = false;
  TRITONSERVER_Error* failed = nullptr;  // after a copy was enqueued, errors wait for the stream first
  for (std::size_t o = 0; late && failed == nullptr && o < model.outputs.size(); ++o) {
    const IoSpec& spec = model.outputs[o];
    if (!wanted[o] || !(spec.planned || spec.dynamic())) continue;
    if (o >= result->size() || !(*result)[o].isTensor()) {
      failed = error(TRITONSERVER_ERROR_INTERNAL, format("output %zu is not a tensor", o));
      break;
    }
    const auto& tensor = (*result)[o].toTensor();
    std::vector<std::int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
    bool within = shape.size() == spec.dims.size() && tensor.nbytes() <= spec.bytes;
    for (std::size_t d = 0; within && d < shape.size(); ++d) within = shape[d] >= 0 && shape[d] <= spec.dims[d];
    if (!within || (!spec.dynamic() && shape != spec.dims)) {
      failed = error(TRITONSERVER_ERROR_INTERNAL, format("output '%s' came out %s (%zu bytes); the program's are %s",
                                                         spec.name.c_str(), dims_text(shape).c_str(), tensor.nbytes(),
                                                         dims_text(spec.dims).c_str()));
      break;
    }
    TRITONBACKEND_Output* output = nullptr;
    failed = TRITONBACKEND_ResponseOutput(response, &output, spec.name.c_str(), spec.type->triton, shape.data(),
                                          static_cast<std::uint32_t>(shape.size()));
    if (failed != nullptr) break;
    void* buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
    std::int64_t memory_id = state.device;
    failed = TRITONBACKEND_OutputBuffer(output, &buffer, tensor.nbytes(), &memory, &memory_id);
    if (failed != nullptr) break;
    if (memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
      failed = error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("output '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                            static_cast<long long>(memory_id), state.name.c_str(), state.device));
      break;
    }
    if (tensor.nbytes() > 0) {
      const cudaError_t c = cudaMemcpyAsync(buffer, tensor.const_data_ptr(), tensor.nbytes(), cudaMemcpyDefault, state.stream);
      copied = true;
      if (c != cudaSuccess) {
        (void)cudaGetLastError();
        const std::string what = format("copying output '%s'", spec.name.c_str());
        const bool lost = poison_if_sticky(c, what);
        failed = error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                       format("%s: %s", what.c_str(), cudaGetErrorString(c)));
      }
    }
  }
  if (copied) {
    // The copies read the call's outputs and write the response's buffers: done before either goes.
    const cudaError_t c = state.waiter->wait(state.stream);
    const std::string what = format("model '%s' instance '%s': copying the outputs", model.name.c_str(), state.name.c_str());
    const bool lost = c != cudaSuccess && poison_if_sticky(c, what);
    if (c != cudaSuccess && failed == nullptr) {
      (void)cudaGetLastError();
      failed = error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                     format("%s: %s (%s)", what.c_str(), cudaGetErrorString(c), cudaGetErrorName(c)));
    }
  }
  if (failed != nullptr) {
    compute_end = now_ns();
    return failed;
  }
  compute_end = now_ns();
  state.points.late_outputs = compute_end;
  return nullptr;
}

}  // namespace trtet_triton
