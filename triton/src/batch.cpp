// Several requests of a batching model in one execute (Note [batching requests], batch_rule.h):
// each checked, the valid ones served in calls of several, their rows gathered into the instance's
// memory and the outputs' rows copied into each response.
#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "batch_rule.h"
#include "execute.h"
#include "fault.h"
#include "plan_set_serving.h"

namespace trtet_triton {

using ::executorch::extension::TensorPtr;

namespace {

using Shapes = std::vector<std::vector<std::int64_t>>;  // one request's input shapes

TRITONSERVER_Error* copy_of(TRITONSERVER_Error* e) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(e), TRITONSERVER_ErrorMessage(e));
}

// A piece of one request's input, as Triton holds it.
struct Piece {
  const void* data = nullptr;
  std::uint64_t bytes = 0;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  std::int64_t id = 0;
};

// The call of several requests (`call.requests`, each checked, `shapes` theirs): null, or what fails
// every request of it; what fails one request alone goes into `own[r]`.
TRITONSERVER_Error* run_batch(InstanceState& state, const BatchCall& call, TRITONBACKEND_Request** requests,
                              const std::vector<TRITONBACKEND_Response*>& responses, const std::vector<Shapes>& shapes,
                              std::vector<TRITONSERVER_Error*>& own, std::uint64_t& compute_start,
                              std::uint64_t& compute_end) {
  ModelState& model = *state.model;
  std::vector<TensorPtr> keep;  // the tensors the method reads and writes, alive until the call is done
  const Shapes& first = shapes[call.requests.front()];

  // Inputs: each one's rows, request after request, in memory of the instance's own.
  state.batch_input_host.resize(model.inputs.size());
  state.batch_input_device.resize(model.inputs.size(), nullptr);
  std::vector<Piece> pieces;
  // A model following a plan set calls on its current plan's stream: taken now, so that the rows
  // gathered on the GPU are in that stream's order before the call (call_method takes it again).
  if (state.set != nullptr) {
    auto stream = state.set->stream(state.set_model);
    if (!stream.ok()) return error(TRITONSERVER_ERROR_INTERNAL, "the plan set's stream: " + stream.error().message());
    state.stream = *stream;
  }
  const cudaStream_t gathered_on = state.stream;
  bool gathered_on_gpu = false;
  // A failure after rows were gathered on the GPU waits for those copies before it returns: they read
  // the requests' buffers, which go back to the server with the answer.
  struct Settle {
    cudaStream_t stream;
    bool& armed;
    ~Settle() {
      if (armed) (void)cudaStreamSynchronize(stream);
    }
  } settle{gathered_on, gathered_on_gpu};
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const IoSpec& spec = model.inputs[i];
    std::vector<std::int64_t> shape = first[i];
    shape[0] = call.rows;
    std::uint64_t total = spec.type->size;
    for (const std::int64_t d : shape) total *= static_cast<std::uint64_t>(d);
    if (total > spec.bytes) {  // each request within the bound and the rows within max_batch_size: never
      return error(TRITONSERVER_ERROR_INTERNAL, format("input '%s': a batch of %s takes %llu bytes, above the program's %zu",
                                                       spec.name.c_str(), dims_text(shape).c_str(),
                                                       static_cast<unsigned long long>(total), spec.bytes));
    }
    pieces.clear();
    bool all_on_gpu = !spec.planned;  // the program copies a planned input into its own memory: host is as good
    for (const std::size_t r : call.requests) {
      InputView view;
      TRTET_TRITON_RETURN_IF_ERROR(read_input(model, requests[r], i, shapes[r][0][0], view));
      std::uint64_t got = 0;
      for (std::uint32_t b = 0; b < view.buffers; ++b) {
        Piece piece;
        TRTET_TRITON_RETURN_IF_ERROR(
            TRITONBACKEND_InputBuffer(view.input, b, &piece.data, &piece.bytes, &piece.memory, &piece.id));
        if (piece.memory == TRITONSERVER_MEMORY_GPU && piece.id != state.device) {  // as run_request refuses it
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("input '%s' is on GPU %lld; instance '%s' runs on GPU %d", spec.name.c_str(),
                              static_cast<long long>(piece.id), state.name.c_str(), state.device));
        }
        got += piece.bytes;
        all_on_gpu = all_on_gpu && piece.memory == TRITONSERVER_MEMORY_GPU;
        pieces.push_back(piece);
      }
      if (got != view.bytes) {  // all of it, or the scratch would hold an earlier request's bytes
        return error(TRITONSERVER_ERROR_INVALID_ARG, format("input '%s' of a batched request has %llu bytes in its %u "
                                                            "buffers; its shape takes %llu",
                                                            spec.name.c_str(), static_cast<unsigned long long>(got),
                                                            view.buffers, static_cast<unsigned long long>(view.bytes)));
      }
    }
    void* scratch = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    if (all_on_gpu) {
      void*& device = state.batch_input_device[i];
      if (device == nullptr) {
        const cudaError_t c = cudaMalloc(&device, std::max<std::size_t>(spec.bytes, 1));
        if (c != cudaSuccess) {
          device = nullptr;
          (void)cudaGetLastError();
          return error(TRITONSERVER_ERROR_INTERNAL, format("device memory for batching input '%s' (%zu bytes): %s",
                                                           spec.name.c_str(), spec.bytes, cudaGetErrorString(c)));
        }
      }
      scratch = device;
      memory = TRITONSERVER_MEMORY_GPU;
    } else {
      state.batch_input_host[i].resize(total);
      scratch = state.batch_input_host[i].data();
    }
    std::uint64_t offset = 0;
    for (const Piece& piece : pieces) {
      if (piece.bytes > total - offset) {
        return error(TRITONSERVER_ERROR_INTERNAL, format("input '%s': the batch's pieces exceed its %llu bytes",
                                                         spec.name.c_str(), static_cast<unsigned long long>(total)));
      }
      char* at = static_cast<char*>(scratch) + offset;
      cudaError_t c = cudaSuccess;
      if (all_on_gpu) {  // in stream order, before the call that reads them
        c = cudaMemcpyAsync(at, piece.data, piece.bytes, cudaMemcpyDeviceToDevice, gathered_on);
        gathered_on_gpu = true;
      } else if (piece.memory == TRITONSERVER_MEMORY_GPU) {
        c = cudaMemcpy(at, piece.data, piece.bytes, cudaMemcpyDeviceToHost);
      } else if (piece.bytes > 0) {
        std::memcpy(at, piece.data, piece.bytes);
      }
      if (c != cudaSuccess) {
        (void)cudaGetLastError();
        const std::string what = format("gathering batched input '%s'", spec.name.c_str());
        const bool lost = poison_if_sticky(c, what);
        return error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                     format("%s: %s", what.c_str(), cudaGetErrorString(c)));
      }
      offset += piece.bytes;
    }
    if (offset != total) {
      return error(TRITONSERVER_ERROR_INTERNAL, format("input '%s': the batch's pieces hold %llu of its %llu bytes",
                                                       spec.name.c_str(), static_cast<unsigned long long>(offset),
                                                       static_cast<unsigned long long>(total)));
    }
    keep.push_back(::executorch::extension::from_blob(scratch, sizes_of(shape), spec.type->et,
                                                      device_of(memory, state.device)));
    const etr::Error set = state.module->set_input(model.parameters.method, etr::EValue(*keep.back()), i);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting input '" + spec.name + "'", set));
  }

  if (gathered_on_gpu && state.set != nullptr) {
    // A switch of the set between here and the call would move the call to another stream: the rows
    // are in place first.
    const cudaError_t c = cudaStreamSynchronize(gathered_on);
    if (c != cudaSuccess) {
      (void)cudaGetLastError();
      const bool lost = poison_if_sticky(c, "gathering a batch's inputs");
      return error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                   format("gathering a batch's inputs: %s", cudaGetErrorString(c)));
    }
  }

  // Which outputs each request asked for (all where it named none).
  std::vector<std::vector<bool>> wanted(call.requests.size(), std::vector<bool>(model.outputs.size(), false));
  for (std::size_t k = 0; k < call.requests.size(); ++k) {
    TRITONBACKEND_Request* request = requests[call.requests[k]];
    std::uint32_t requested = 0;
    TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &requested));
    if (requested == 0) wanted[k].assign(model.outputs.size(), true);
    for (std::uint32_t q = 0; q < requested; ++q) {
      const char* name = nullptr;
      TRTET_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, q, &name));
      for (std::size_t o = 0; o < model.outputs.size(); ++o) {
        if (model.outputs[o].name == name) wanted[k][o] = true;
      }
    }
  }
  // Outputs: into memory of the instance's own at the bound's size (the GPU's where the first request
  // that asked for it would have it there), copied into each response after the call.
  state.output_scratch.resize(model.outputs.size());
  for (std::size_t o = 0; o < model.outputs.size(); ++o) {
    const IoSpec& spec = model.outputs[o];
    if (spec.planned) continue;  // the program's own memory
    bool on_gpu = false;
    for (std::size_t k = 0; k < call.requests.size(); ++k) {
      if (!wanted[k][o]) continue;
      std::size_t size = 0;
      TRITONSERVER_MemoryType preferred = TRITONSERVER_MEMORY_CPU;
      std::int64_t preferred_id = 0;
      TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputBufferProperties(requests[call.requests[k]], spec.name.c_str(),
                                                                          &size, &preferred, &preferred_id);
      const bool known = e == nullptr;
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      on_gpu = known && preferred == TRITONSERVER_MEMORY_GPU && preferred_id == state.device;
      break;
    }
    void* buffer = nullptr;
    if (on_gpu) {
      TRTET_TRITON_RETURN_IF_ERROR(output_device_scratch(state, o, buffer));
    } else {
      state.output_scratch[o].resize(spec.bytes);
      buffer = state.output_scratch[o].data();
    }
    keep.push_back(::executorch::extension::from_blob(
        buffer, sizes_of(spec.dims), spec.type->et,
        device_of(on_gpu ? TRITONSERVER_MEMORY_GPU : TRITONSERVER_MEMORY_CPU, state.device)));
    const etr::Error set = state.module->set_output(model.parameters.method, etr::EValue(*keep.back()), o);
    if (set != etr::Error::Ok) return error(TRITONSERVER_ERROR_INVALID_ARG, executorch_failure("setting output '" + spec.name + "'", set));
  }

  std::optional<etr::Result<std::vector<etr::EValue>>> called;
  gathered_on_gpu = false;  // from here the call's own stream handling settles them (call_method)
  TRTET_TRITON_RETURN_IF_ERROR(call_method(state, /*wait=*/true, called, compute_start, compute_end));
  const std::vector<etr::EValue>& result = **called;

  // Each output's rows into the responses that asked for it, request after request, on the
  // instance's stream; then one wait.
  bool copied = false;
  for (std::size_t o = 0; o < model.outputs.size(); ++o) {
    const IoSpec& spec = model.outputs[o];
    bool any = false;
    for (const auto& w : wanted) any = any || w[o];
    if (!any) continue;
    if (o >= result.size() || !result[o].isTensor()) return error(TRITONSERVER_ERROR_INTERNAL, format("output %zu is not a tensor", o));
    const auto& tensor = result[o].toTensor();
    std::vector<std::int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
    bool within = shape.size() == spec.dims.size() && !shape.empty() && shape[0] == call.rows && tensor.nbytes() <= spec.bytes;
    for (std::size_t d = 0; within && d < shape.size(); ++d) within = shape[d] >= 0 && shape[d] <= spec.dims[d];
    if (!within) {
      return error(TRITONSERVER_ERROR_INTERNAL, format("output '%s' came out %s for a batch of %lld rows; the program's "
                                                       "bound is %s, and dim 0 must be the batch's rows",
                                                       spec.name.c_str(), dims_text(shape).c_str(),
                                                       static_cast<long long>(call.rows), dims_text(spec.dims).c_str()));
    }
    const std::size_t row_bytes = tensor.nbytes() / static_cast<std::size_t>(call.rows);
    const char* source = static_cast<const char*>(tensor.const_data_ptr());
    std::size_t row = 0;
    for (std::size_t k = 0; k < call.requests.size(); ++k) {
      const std::size_t r = call.requests[k];
      const std::int64_t rows = shapes[r][0][0];
      const std::size_t at = row;
      row += static_cast<std::size_t>(rows);
      if (!wanted[k][o] || own[r] != nullptr) continue;
      shape[0] = rows;
      TRITONBACKEND_Output* output = nullptr;
      TRITONSERVER_Error* e = TRITONBACKEND_ResponseOutput(responses[r], &output, spec.name.c_str(), spec.type->triton,
                                                           shape.data(), static_cast<std::uint32_t>(shape.size()));
      void* buffer = nullptr;
      TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_GPU;
      std::int64_t memory_id = state.device;
      const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes;
      if (e == nullptr) e = TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &memory, &memory_id);
      if (e == nullptr && memory == TRITONSERVER_MEMORY_GPU && memory_id != state.device) {
        e = error(TRITONSERVER_ERROR_INVALID_ARG, format("output '%s' is on GPU %lld; instance '%s' runs on GPU %d",
                                                         spec.name.c_str(), static_cast<long long>(memory_id),
                                                         state.name.c_str(), state.device));
      }
      if (e == nullptr && bytes > 0) {
        const cudaError_t c = cudaMemcpyAsync(buffer, source + at * row_bytes, bytes, cudaMemcpyDefault, state.stream);
        copied = true;
        if (c != cudaSuccess) {
          (void)cudaGetLastError();
          const std::string what = format("copying output '%s'", spec.name.c_str());
          if (poison_if_sticky(c, what)) {
            return error(TRITONSERVER_ERROR_UNAVAILABLE, format("%s: %s", what.c_str(), cudaGetErrorString(c)));
          }
          e = error(TRITONSERVER_ERROR_INTERNAL, format("%s: %s", what.c_str(), cudaGetErrorString(c)));
        }
      }
      own[r] = e;  // this request's alone; the others go on
    }
  }
  if (copied) {
    // The copies read the call's outputs and write the responses' buffers: done before either goes.
    const cudaError_t c = state.waiter->wait(state.stream);
    if (c != cudaSuccess) {
      (void)cudaGetLastError();
      const std::string what = format("model '%s' instance '%s': copying a batch's outputs", model.name.c_str(),
                                      state.name.c_str());
      const bool lost = poison_if_sticky(c, what);
      compute_end = now_ns();
      return error(lost ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                   format("%s: %s (%s)", what.c_str(), cudaGetErrorString(c), cudaGetErrorName(c)));
    }
  }
  compute_end = now_ns();
  return nullptr;
}

}  // namespace

void serve_batched(InstanceState& state, TRITONBACKEND_Request** requests, const std::uint32_t count,
                   ExecuteFinisher& finisher) {
  const ModelState& model = *state.model;
  std::vector<TRITONBACKEND_Response*> responses(count, nullptr);
  std::vector<TRITONSERVER_Error*> errors(count, nullptr);
  std::vector<Shapes> shapes(count);
  std::vector<bool> valid(count, false);
  // Each request on its own first: one that fails is answered now, with its reason.
  for (std::uint32_t r = 0; r < count; ++r) {
    errors[r] = TRITONBACKEND_ResponseNew(&responses[r], requests[r]);
    if (errors[r] == nullptr) {
      try {
        errors[r] = check_request(model, requests[r], shapes[r]);
      } catch (const std::exception& ex) {
        errors[r] = error(TRITONSERVER_ERROR_INTERNAL, std::string("checking a request: ") + ex.what());
      }
    }
    valid[r] = errors[r] == nullptr;
  }
  const std::vector<BatchCall> calls = batch_calls(shapes, valid, model.max_batch);
  std::uint32_t finished = 0;
  const std::uint64_t checked = now_ns();
  for (std::uint32_t r = 0; r < count; ++r) {
    if (valid[r]) continue;
    FinishedRequest done;
    done.request = requests[r];
    done.response = responses[r];
    done.error = errors[r];
    done.compute_start = done.compute_end = checked;
    done.phased = false;
    finisher.finish(done, ++finished == count);
  }
  for (const BatchCall& call : calls) {
    std::uint64_t compute_start = now_ns();
    std::uint64_t compute_end = compute_start;
    TRITONSERVER_Error* failed = nullptr;  // every request of the call's
    if (call.requests.size() == 1) {  // as any request: its buffers bound in place
      const std::size_t r = call.requests.front();
      state.points = RequestPoints{};
      state.rows = 1;
      try {
        errors[r] = run_request(state, requests[r], responses[r], compute_start, compute_end);
      } catch (const std::exception& ex) {
        errors[r] = error(TRITONSERVER_ERROR_INTERNAL, std::string("serving a request: ") + ex.what());
      }
    } else {
      try {
        failed = run_batch(state, call, requests, responses, shapes, errors, compute_start, compute_end);
      } catch (const std::exception& ex) {
        failed = error(TRITONSERVER_ERROR_INTERNAL, std::string("serving a batch: ") + ex.what());
      }
    }
    if (compute_end < compute_start) compute_end = compute_start;
    for (const std::size_t r : call.requests) {
      FinishedRequest done;
      done.request = requests[r];
      done.response = responses[r];
      done.error = errors[r] != nullptr ? errors[r] : (failed != nullptr ? copy_of(failed) : nullptr);
      done.ok = done.error == nullptr;
      done.compute_start = compute_start;
      done.compute_end = compute_end;
      done.rows = static_cast<std::uint64_t>(shapes[r].empty() || shapes[r][0].empty() ? 0 : shapes[r][0][0]);
      done.phased = false;
      finisher.finish(done, ++finished == count);
    }
    if (failed != nullptr) TRITONSERVER_ErrorDelete(failed);
  }
}

}  // namespace trtet_triton
