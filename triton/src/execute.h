// Execute: one request served by an instance, start to end (execute.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "finish.h"
#include "instance.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// The device of memory Triton names: the GPU `id`, or the host.
::executorch::aten::Device device_of(TRITONSERVER_MemoryType type, std::int64_t id);
std::vector<::executorch::aten::SizesType> sizes_of(const std::vector<std::int64_t>& dims);

// The call on the instance's stream under its guard (the plan set's stream taken first, where the
// model follows one), then, where `wait`, the wait for that stream: null, or the call's failure (a
// sticky CUDA error poisons the process: Note [the fault domain]). `called` holds the method's outputs.
TRITONSERVER_Error* call_method(InstanceState& state, bool wait, std::optional<etr::Result<std::vector<etr::EValue>>>& called,
                                std::uint64_t& compute_start, std::uint64_t& compute_end);

// Output o's device memory of the instance's own (the bound's bytes, made on first use) into `buffer`.
TRITONSERVER_Error* output_device_scratch(InstanceState& state, std::size_t o, void*& buffer);

// A request's input as Triton gives it.
struct InputView {
  TRITONBACKEND_Input* input = nullptr;
  const std::int64_t* shape = nullptr;
  std::uint32_t dims = 0;
  std::uint64_t bytes = 0;
  std::uint32_t buffers = 0;
};

// Input i of `request`: found, its type, its shape (against the program's, or its bound) and its
// bytes checked, and batched, its dim 0 against `rows`, input 0's (-1: not checked); nothing read or copied.
TRITONSERVER_Error* read_input(const ModelState& model, TRITONBACKEND_Request* request, std::size_t i, std::int64_t rows,
                               InputView& view);
// An input Triton gives in `buffers` pieces (host or GPU memory), gathered in order into `scratch`
// (resized to `bytes`); refused unless the pieces hold exactly `bytes`. `from_gpu`: a piece was on the GPU.
TRITONSERVER_Error* gather_input(const IoSpec& spec, TRITONBACKEND_Input* input, std::uint32_t buffers, std::uint64_t bytes,
                                 std::vector<unsigned char>& scratch, bool& from_gpu);
// Every input of `request` so checked (and their count); each one's shape into `shapes`.
TRITONSERVER_Error* check_request(const ModelState& model, TRITONBACKEND_Request* request,
                                  std::vector<std::vector<std::int64_t>>& shapes);

TRITONSERVER_Error* run_request(InstanceState& state, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                std::uint64_t& compute_start, std::uint64_t& compute_end);

// An execute of several requests of a batching model (Note [batching requests]): each checked, the
// valid ones served in calls of several, every request finished through `finisher`.
void serve_batched(InstanceState& state, TRITONBACKEND_Request** requests, std::uint32_t count,
                   ExecuteFinisher& finisher);

}  // namespace trtet_triton
