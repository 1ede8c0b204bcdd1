// Micro figures with Google Benchmark: the host cost of execute() on the device-resident async path
// (host_overhead's parts) and of the checks it makes. Needs a GPU; without one every benchmark
// reports the skip.
#include <benchmark/benchmark.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "cuda/device.h"
#include "cuda/event.h"
#include "cuda/stream_facts.h"
#include "session/session.h"
#include "engines/test_engine_factory.h"
#include "green/split.h"
#include "harness.h"
#include "micro_support.h"
#include "spin_engine.h"

namespace trtet_bench {
namespace {

using ex::delegate::Session;
using ex::delegate::TensorView;

struct Fixture {
  cudaStream_t stream = nullptr;
  std::unique_ptr<Buffer> x, y, out;
  std::unique_ptr<Session> session;
  ex::engine::Engine* raw = nullptr;
};

Fixture* fixture() {
  static Fixture* f = [] {
    auto* made = new Fixture;
    require_cuda(cudaStreamCreateWithFlags(&made->stream, cudaStreamNonBlocking), "stream");
    made->x = std::make_unique<Buffer>(Memory::kDevice, 256);
    made->y = std::make_unique<Buffer>(Memory::kDevice, 256);
    made->out = std::make_unique<Buffer>(Memory::kDevice, 256);
    auto engine = trtet_test::make_test_engine("elementwise n=256", 0);
    require(engine.status(), "engine");
    made->session = std::make_unique<Session>(std::move(engine).value());
    require(made->session->initialize(), "initialize");
    return made;
  }();
  return f;
}

void BM_ExecuteDeviceResidentUnderGuard(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  TensorView args[3] = {f->x->view(256), f->y->view(256), f->out->view(256)};
  int pending = 0;
  for (auto _ : state) {
    ex::CudaStreamGuard guard(f->stream);
    require(f->session->execute(args, 3), "execute");
    drain_every_256(state, f->stream, pending);
  }
  cudaStreamSynchronize(f->stream);
}
BENCHMARK(BM_ExecuteDeviceResidentUnderGuard);

/// A second engine of the fixture's build, shapes set and bound to the fixture's tensors.
ex::engine::EnginePtr bound_engine(Fixture* f) {
  auto engine = trtet_test::make_test_engine("elementwise n=256", 0);
  require(engine.status(), "engine");
  ex::engine::Engine& e = **engine;
  require(e.set_input_shape(0, ex::Shape{256}), "shape");
  require(e.set_input_shape(1, ex::Shape{256}), "shape");
  require(e.infer_shapes().status(), "infer");
  require(e.set_tensor_address(0, f->x->data()), "addr");
  require(e.set_tensor_address(1, f->y->data()), "addr");
  require(e.set_tensor_address(2, f->out->data()), "addr");
  return std::move(engine).value();
}

void BM_EngineEnqueueAlone(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  ex::engine::EnginePtr engine = bound_engine(f);
  ex::engine::Engine& e = *engine;
  int pending = 0;
  for (auto _ : state) {
    require(e.enqueue(f->stream), "enqueue");
    drain_every_256(state, f->stream, pending);
  }
  cudaStreamSynchronize(f->stream);
}
BENCHMARK(BM_EngineEnqueueAlone);

/// The engine's enqueue and the record of an event after it, through the driver as the session
/// records its completion event; with `contract_calls`, also the other CUDA calls the execute
/// contract makes on every call, in the order a repeated eager call makes them (the device guard,
/// the capture-state query, the stream id), with nothing of the session between them.
void enqueue_and_record(benchmark::State& state, bool contract_calls) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  ex::engine::EnginePtr engine = bound_engine(f);
  auto event = ex::cuda::Event::create();
  require(event.status(), "event");
  int pending = 0;
  for (auto _ : state) {
    if (contract_calls) {
      ex::cuda::DeviceGuard device(0);
      auto capturing = ex::cuda::stream_is_capturing(f->stream);
      auto id = ex::cuda::stream_id(f->stream);
      benchmark::DoNotOptimize(capturing);
      benchmark::DoNotOptimize(id);
    }
    require(engine->enqueue(f->stream), "enqueue");
    require(event->record(f->stream), "record");
    drain_every_256(state, f->stream, pending);
  }
  cudaStreamSynchronize(f->stream);
}

// What a repeated eager call must do at the least (BM_ExecuteDeviceResidentUnderGuard less this is
// the delegate's own host time on that path).
void BM_EngineEnqueueAndRecord(benchmark::State& state) { enqueue_and_record(state, /*contract_calls=*/false); }
BENCHMARK(BM_EngineEnqueueAndRecord);

// The floor of BM_ExecuteDeviceResidentUnderGuard next to a real launch.
void BM_EngineEnqueueWithTheContractsCalls(benchmark::State& state) {
  enqueue_and_record(state, /*contract_calls=*/true);
}
BENCHMARK(BM_EngineEnqueueWithTheContractsCalls);

void BM_StreamGetDevice(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(ex::cuda::stream_device(f->stream, /*capturing=*/false));
}
BENCHMARK(BM_StreamGetDevice);

void BM_StreamIsCapturing(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(ex::cuda::stream_is_capturing(f->stream));
}
BENCHMARK(BM_StreamIsCapturing);

void BM_EventRecord(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  cudaEvent_t event = nullptr;
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  for (auto _ : state) cudaEventRecord(event, f->stream);
  cudaEventDestroy(event);
}
BENCHMARK(BM_EventRecord);

// What else an eager execute asks per call: the stream's green context (through the
// project's driver table, as execute asks it on a stream it has not seen), and the host time of one
// graph launch, what a graph-mode call pays at least. The stream id, capture state, event record
// and current device: bench/micro_calls.cpp.
/// A stream of a 16-SM green context, kept for the whole process.
cudaStream_t green_stream() {
  static cudaStream_t stream = [] {
    auto parts = ex::green::split_device(0, ex::green::SplitRequest::counts({16}));
    require(parts.status(), "split_device");
    auto* kept = new std::vector<ex::green::Partition>(std::move(parts).value());  // never destroyed
    auto made = (*kept)[0].context.make_stream();
    require(made.status(), "make_stream");
    return *made;
  }();
  return stream;
}

// cuStreamGetGreenCtx through the driver table (cuda::stream_green_context): on an ordinary stream
// (green:0) and on a green context's stream (green:1).
void BM_StreamGreenContext(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  cudaStream_t stream = state.range(0) == 0 ? fixture()->stream : green_stream();
  for (auto _ : state) benchmark::DoNotOptimize(ex::cuda::stream_green_context(stream));
}
BENCHMARK(BM_StreamGreenContext)->ArgName("green")->Arg(0)->Arg(1);

// cudaGraphLaunch of a graph of one kernel (the spin engine's, one block, no spin).
void BM_GraphLaunchOneKernel(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  Fixture* f = fixture();
  const SpinOptions one{1, 128, 0, 0, 1, 256};
  cudaGraph_t graph = nullptr;
  require_cuda(cudaStreamBeginCapture(f->stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  require(launch_spin_scale(f->x->data(), f->out->data(), 256, one, f->stream), "spin kernel");
  require_cuda(cudaStreamEndCapture(f->stream, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  int pending = 0;
  for (auto _ : state) {
    cudaGraphLaunch(exec, f->stream);
    drain_every_256(state, f->stream, pending);
  }
  cudaStreamSynchronize(f->stream);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}
BENCHMARK(BM_GraphLaunchOneKernel);

// The host side of pageable staging: copying 64 MiB of pageable memory into pinned memory with
// state.range(0) threads (what bounds host_staging's pageable case). Needs no GPU work, only pinned
// memory.
void BM_HostCopyPageableToPinned(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  const std::size_t bytes = 64u << 20;
  const int threads = static_cast<int>(state.range(0));
  std::vector<char> source(bytes, 1);
  void* pinned = nullptr;
  require_cuda(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable), "cudaHostAlloc");
  for (auto _ : state) {
    std::vector<std::thread> pool;
    const std::size_t slice = bytes / static_cast<std::size_t>(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::memcpy(static_cast<char*>(pinned) + t * slice, source.data() + t * slice, slice);
      });
    }
    for (std::thread& thread : pool) thread.join();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
  cudaFreeHost(pinned);
}
BENCHMARK(BM_HostCopyPageableToPinned)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(15)->UseRealTime();

}  // namespace
}  // namespace trtet_bench

BENCHMARK_MAIN();
