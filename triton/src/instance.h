// An instance: its state (partition, stream, Module, metrics) and its load,
// TRITONBACKEND_ModelInstanceInitialize's work (instance.cpp).
#pragma once

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <torch_tensorrt/executorch/GreenContext.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu_time.h"
#include "model.h"
#include "wait.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

using ::executorch::extension::Module;

struct InstanceState {
  ModelState* model = nullptr;
  std::string name;
  int device = 0;
  et::GreenContext* partition = nullptr;  // null: the whole GPU (or a plan set's)
  cudaStream_t stream = nullptr;           // with a plan set: the stream of the call now or last
  SetServing* set = nullptr;               // the plan set the model follows here (its split holds it)
  std::string set_model;                   // the model's name in the set
  std::optional<std::size_t> set_index;    // the same, as the set's controller counts models
  bool own_stream = false;
  int stream_priority = 0;  // CUDA's number for the instance's own stream (0: the default)
  std::unique_ptr<Module> module;
  GpuTimes* gpu_times = nullptr;  // the Module's tracer (it owns it); null without the server's metrics
  std::uint64_t calls = 0;         // requests executed, for gpu_time_every
  bool timed = false;              // the request being served has its GPU time measured
  std::unique_ptr<StreamWaiter> waiter;  // how it waits for its stream (stream_wait)
  InstanceMetrics metrics;
  RequestPoints points;            // the request being served (Note [request phases])
  std::vector<bool> wanted_outputs;          // per request: the outputs the client asked for
  std::vector<std::vector<unsigned char>> input_scratch;   // per input: given in pieces, or on the GPU for a planned input
  std::vector<std::vector<unsigned char>> output_scratch;  // per output: dynamic, or not asked for
  std::vector<void*> output_device_scratch;                // per output: dynamic, its response on the GPU

  ~InstanceState() {
    module.reset();
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);  // no host function left to run on the waiter
    waiter.reset();
    for (void* p : output_device_scratch) {
      if (p != nullptr) (void)cudaFree(p);
    }
    if (own_stream && stream != nullptr) {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    }
  }
};

TRITONSERVER_Error* initialize_instance(TRITONBACKEND_ModelInstance* instance, ModelState& model, InstanceState& state);

}  // namespace trtet_triton
