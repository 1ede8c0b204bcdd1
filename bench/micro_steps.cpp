// Micro figures for the host work of execute() besides its CUDA calls (host_overhead's remainder):
// the argument checks, the engine's shape and address calls, the pointer-kind cache, and the lock
// with the device guard, each alone on the same 2-input, 1-output test engine
// BM_ExecuteDeviceResidentUnderGuard calls; and a whole repeated call on an engine that queues
// nothing, with the event record it makes. Without a GPU each reports the skip and why (the test
// engines need one).
#include <benchmark/benchmark.h>
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "cuda/device.h"
#include "cuda/event.h"
#include "session/checks.h"
#include "session/memory_kind.h"
#include "session/session.h"
#include "session/tensor_view.h"
#include "engines/fake_engine.h"
#include "engines/test_engine_factory.h"
#include "micro_support.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
using ex::delegate::TensorView;

constexpr std::int64_t kElements = 256;

/// A view of `kElements` floats at `data`, hinted as device memory.
TensorView device_view(void* data) {
  TensorView view;
  view.data = data;
  view.capacity_bytes = kElements * sizeof(float);
  view.shape = ex::Shape{kElements};
  view.hint = ex::delegate::MemoryHint::kDevice;
  return view;
}

/// The engine and three argument views over addresses that are never dereferenced here.
struct Steps {
  ex::engine::EnginePtr engine;
  std::string why_not;  ///< why the engine could not be made (the test engines need a GPU)
  float x[kElements], y[kElements], out[kElements];
  TensorView args[3];
};

Steps* steps(benchmark::State& state) {
  static Steps* made = [] {
    auto* s = new Steps;
    auto engine = trtet_test::make_test_engine("elementwise n=256", 0);
    if (engine.ok()) {
      s->engine = std::move(engine).value();
    } else {
      s->why_not = engine.status().message();
    }
    float* data[3] = {s->x, s->y, s->out};
    for (int i = 0; i < 3; ++i) s->args[i] = device_view(data[i]);
    return s;
  }();
  if (made->engine == nullptr) {
    state.SkipWithError(("the test engine could not be made: " + made->why_not).c_str());
    return nullptr;
  }
  return made;
}

void BM_StepCheckArguments(benchmark::State& state) {
  Steps* s = steps(state);
  if (s == nullptr) return;
  for (auto _ : state) {
    auto profile = ex::delegate::check_arguments(*s->engine, s->args, 3);
    benchmark::DoNotOptimize(profile);
  }
}
BENCHMARK(BM_StepCheckArguments);

void BM_StepEngineShapes(benchmark::State& state) {
  Steps* s = steps(state);
  if (s == nullptr) return;
  for (auto _ : state) {
    (void)s->engine->set_input_shape(0, s->args[0].shape);
    (void)s->engine->set_input_shape(1, s->args[1].shape);
    auto unresolved = s->engine->infer_shapes();
    auto shape = s->engine->output_shape(2);
    benchmark::DoNotOptimize(unresolved);
    benchmark::DoNotOptimize(shape);
  }
}
BENCHMARK(BM_StepEngineShapes);

void BM_StepEngineAddresses(benchmark::State& state) {
  Steps* s = steps(state);
  if (s == nullptr) return;
  for (auto _ : state) {
    for (int i = 0; i < 3; ++i) (void)s->engine->set_tensor_address(i, s->args[i].data);
  }
}
BENCHMARK(BM_StepEngineAddresses);

// Three device pointers already in the cache (the case of every call after the first with
// planned memory and no hint).
void BM_StepPointerKindCacheHits(benchmark::State& state) {
  if (trtet_bench::skipped_without_gpu(state)) return;
  void* device[3] = {};
  for (void*& p : device) cudaMalloc(&p, 1024);
  ex::delegate::PointerKindCache cache;
  for (void* p : device) (void)cache.classify(p, 0);
  for (auto _ : state) {
    for (void* p : device) {
      auto kind = cache.classify(p, 0);
      benchmark::DoNotOptimize(kind);
    }
  }
  for (void* p : device) cudaFree(p);
}
BENCHMARK(BM_StepPointerKindCacheHits);

// The session's lock and the device guard every call takes (the device already current).
void BM_StepLockAndDeviceGuard(benchmark::State& state) {
  if (trtet_bench::skipped_without_gpu(state)) return;
  std::mutex mutex;
  for (auto _ : state) {
    std::lock_guard<std::mutex> lock(mutex);
    ex::cuda::DeviceGuard device(0);
    benchmark::DoNotOptimize(device.status().ok());
  }
}
BENCHMARK(BM_StepLockAndDeviceGuard);

// A whole repeated eager call (Note [repeated calls]) on an engine that queues nothing
// (FakeEngine, which only records what it is asked): the delegate's own host time on that path,
// its completion event's record included, without a kernel launch next to it.
void BM_ExecuteRepeatOnAnEngineThatQueuesNothing(benchmark::State& state) {
  if (trtet_bench::skipped_without_gpu(state)) return;
  auto made = trtet_test::make_test_engine("fake n=256", 0);
  if (!made.ok()) {
    state.SkipWithError(made.status().message().c_str());
    return;
  }
  auto* fake = dynamic_cast<trtet_test::FakeEngine*>(made->get());
  ex::delegate::Session session(std::move(made).value());
  if (!session.initialize().ok()) {
    state.SkipWithError("initialize failed");
    return;
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  void* device[3] = {};
  for (void*& p : device) cudaMalloc(&p, kElements * sizeof(float));
  TensorView args[3];
  for (int i = 0; i < 3; ++i) args[i] = device_view(device[i]);
  int since_clear = 0;
  for (auto _ : state) {
    ex::CudaStreamGuard guard(stream);
    if (!session.execute(args, 3).ok()) {
      state.SkipWithError("execute failed");
      break;
    }
    if (++since_clear == 4096) {  // the fake's record of calls stays small
      state.PauseTiming();
      if (fake != nullptr) fake->clear_calls();
      cudaStreamSynchronize(stream);
      since_clear = 0;
      state.ResumeTiming();
    }
  }
  state.counters["repeated"] = static_cast<double>(session.stats().repeated_enqueues);
  session.destroy();
  cudaStreamSynchronize(stream);
  for (void* p : device) cudaFree(p);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_ExecuteRepeatOnAnEngineThatQueuesNothing);

// The record of an event on a stream through the driver, as the session records completion_.
void BM_StepEventRecord(benchmark::State& state) {
  if (trtet_bench::skipped_without_gpu(state)) return;
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  auto event = ex::cuda::Event::create();
  int since_sync = 0;
  for (auto _ : state) {
    (void)event->record(stream);
    if (++since_sync == 4096) {
      state.PauseTiming();
      cudaStreamSynchronize(stream);
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_StepEventRecord);

}  // namespace
