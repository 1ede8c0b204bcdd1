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

#include "completion.h"
#include "gpu_time.h"
#include "model.h"
#include "wait.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

using ::executorch::extension::Module;

// A request the instance is done with, as its completion thread finishes it (Note [sending from a
// completion thread]): sent, its statistics reported, released.
struct FinishedRequest {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;  // null where Triton made none
  TRITONSERVER_Error* error = nullptr;          // the request's failure (the finisher deletes it), or null
  bool ok = false;
  std::uint64_t exec_start = 0, compute_start = 0, compute_end = 0;
  RequestPoints points;  // every point up to late_outputs set where ok (Note [request phases])
  std::uint64_t rows = 1;  // what it adds to the batch's size: 1, or batched, its dim 0
  bool phased = true;      // in the request phases' sums (not a request served in a call of several)
  bool last = false;     // the batch's last request: the batch's statistics go with it
  bool batch_ok = false;  // a request of the batch so far was served
  std::uint64_t batch_served = 0, batch_compute_start = 0, batch_compute_end = 0;  // its size (rows) and times
};

struct InstanceState {
  ModelState* model = nullptr;
  TRITONBACKEND_ModelInstance* triton = nullptr;  // Triton's instance, for statistics
  std::string name;
  int device = 0;
  et::GreenContext* partition = nullptr;  // null: the whole GPU (or a plan set's)
  std::shared_ptr<DeviceSplit> split;     // the partition's split: the stream goes back to it
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
  std::vector<std::vector<unsigned char>> batch_input_host;  // per input: a call's rows gathered (Note [batching requests])
  std::vector<void*> batch_input_device;                     // the same on the GPU (the bound's bytes)
  std::uint64_t rows = 1;                                    // the request run_request served: its batch size
  // send_from completion_thread: finishes the requests handed to it (null: the instance's thread does).
  std::unique_ptr<CompletionThread<FinishedRequest>> completer;

  ~InstanceState() {
    completer.reset();  // every request handed over finished first: it adds to the metrics
    module.reset();
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);  // no host function left to run on the waiter
    waiter.reset();
    for (void* p : output_device_scratch) {
      if (p != nullptr) (void)cudaFree(p);
    }
    for (void* p : batch_input_device) {
      if (p != nullptr) (void)cudaFree(p);
    }
    if (own_stream && stream != nullptr) {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    } else if (partition != nullptr && split != nullptr && stream != nullptr) {
      give_back_partition_stream(*split, partition, stream);  // waited for above
    }
  }
};

TRITONSERVER_Error* initialize_instance(TRITONBACKEND_ModelInstance* instance, ModelState& model, InstanceState& state);

}  // namespace trtet_triton
