// What the test-only TensorRT (libtrtet_fake_nvinfer.so) saw, for the adapter's tests to check:
// read through trtet_fake_stats() (dlsym), reset with trtet_fake_reset_stats(). No TensorRT types,
// so the test reads it without knowing the fake's classes.
#pragma once

#include <cstdint>

extern "C" {

struct TrtetFakeStats {
  int runtimes_created;
  int runtimes_destroyed;
  int engines_created;
  int engines_destroyed;
  int contexts_created;
  int contexts_destroyed;
  int last_allocation_strategy;  ///< createExecutionContext's ExecutionContextAllocationStrategy
  int host_code_allowed;         ///< the last setEngineHostCodeAllowed value (-1: never called)
  int enqueues;
  int enqueues_failed;
  /// enqueueV3 calls of an engine with auxiliary streams for which setAuxStreams was (or was not)
  /// called since the previous enqueueV3: TensorRT applies setAuxStreams to the next enqueueV3 only
  /// and otherwise makes streams of its own.
  int enqueues_with_aux_streams;
  int enqueues_without_aux_streams;
  int enqueues_on_default_stream;  ///< null, legacy or per-thread default stream
  void* last_aux_streams[8];       ///< the streams the last enqueueV3 used
  int last_aux_stream_count;
  void* last_enqueue_stream;
  /// Weight-streaming calls (budget set/get, automatic budget) made of an engine without streamable
  /// weights: the adapter must make none.
  int weight_streaming_calls_without_streamable_weights;
  int automatic_budget_queries;
  int budget_sets;
  std::int64_t last_budget_set;
  int set_input_shape_calls;
  int infer_shapes_calls;
  int profile_selections;        ///< setOptimizationProfileAsync calls that selected a profile
  int last_profile_selected;
  void* last_profile_stream;     ///< the stream of the last setOptimizationProfileAsync
  std::int64_t device_memory_set; ///< the size of the last setDeviceMemoryV2 (with a non-null pointer)
};

/// The process-wide stats of the fake library.
TrtetFakeStats* trtet_fake_stats();
/// Zeroes them (host_code_allowed back to -1).
void trtet_fake_reset_stats();

/// A fault hook: returns non-zero when the TensorRT call `api` must fail. The fault loop
/// (tests/faults) counts these calls as fallible points: createInferRuntime, deserializeCudaEngine,
/// createExecutionContext, setInputShape, inferShapes, setTensorAddress, enqueueV3. Each fails as
/// TensorRT's does (a null object or false, the reason logged: "<api>: injected fault").
typedef int (*TrtetFakeFaultHook)(const char* api);
/// Sets (or, with NULL, clears) the process's hook; none by default.
void trtet_fake_set_fault_hook(TrtetFakeFaultHook hook);
}

/// The plan format of the fake: this magic, then a JSON description (fake_plan.h).
#define TRTET_FAKE_PLAN_MAGIC "TRTETFAKEPLAN1\n"
