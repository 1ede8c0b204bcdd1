// Micro figures for what profiling adds to a call (etdump's parts, Note [deferred GPU times]): the
// CUDA calls a timed call makes (two timing events recorded, one query, the elapsed times read), a
// whole call of the profiler's own machinery without ExecuTorch (marks taken, recorded around an
// empty enqueue point, handed back, collected), and a session call with a record against one
// without. Needs a GPU; without one every benchmark reports the skip.
#include <benchmark/benchmark.h>
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <vector>

#include "session/call_timing.h"
#include "session/session.h"
#include "engines/test_engine_factory.h"
#include "harness.h"
#include "micro_support.h"

namespace trtet_bench {
namespace {

using ex::delegate::CallMarks;
using ex::delegate::CallTimer;
using ex::delegate::CallRecord;
using ex::delegate::Mark;
using ex::delegate::TensorView;

std::uint64_t steady_ticks() {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

cudaStream_t bench_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t made = nullptr;
    require_cuda(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking), "stream");
    return made;
  }();
  return stream;
}

void BM_TimingEventRecord(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  cudaEvent_t event = nullptr;
  cudaEventCreateWithFlags(&event, cudaEventDefault);
  for (auto _ : state) cudaEventRecord(event, bench_stream());
  cudaStreamSynchronize(bench_stream());
  cudaEventDestroy(event);
}
BENCHMARK(BM_TimingEventRecord);

void BM_TimingEventQueryAndElapsed(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreateWithFlags(&a, cudaEventDefault);
  cudaEventCreateWithFlags(&b, cudaEventDefault);
  cudaEventRecord(a, bench_stream());
  cudaEventRecord(b, bench_stream());
  cudaStreamSynchronize(bench_stream());
  float ms = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cudaEventQuery(b));
    benchmark::DoNotOptimize(cudaEventElapsedTime(&ms, a, b));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}
BENCHMARK(BM_TimingEventQueryAndElapsed);

/// The profiler's whole cost for one call with device I/O, without the session or ExecuTorch:
/// marks taken, the engine's two marks recorded, handed back, and what is known collected.
void BM_CallTimerPerCall(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  CallTimer profiler({&steady_ticks, 1.0});
  std::vector<ex::delegate::TimedCall> timed;
  std::uint64_t sequence = 0;
  int queued = 0;
  for (auto _ : state) {
    std::unique_ptr<CallMarks> marks = profiler.take_marks();
    marks->record(Mark::kEngineStart, bench_stream());
    marks->record(Mark::kEngineEnd, bench_stream());
    CallRecord record;
    record.filled = true;
    profiler.finish(std::move(marks), record, ++sequence, /*ok=*/true);
    timed.clear();
    (void)profiler.collect(timed);
    drain_every_256(state, bench_stream(), queued);
  }
}
BENCHMARK(BM_CallTimerPerCall);

/// A device-I/O session call with a record whose marks are recorded (arg 1) or without a record
/// (arg 0): what the session's side of profiling adds.
void BM_SessionCallWithRecord(benchmark::State& state) {
  if (skipped_without_gpu(state)) return;
  auto engine = trtet_test::make_test_engine("elementwise n=256", 0);
  require(engine.status(), "engine");
  ex::delegate::Session session(std::move(engine).value());
  require(session.initialize(), "initialize");
  Buffer x(Memory::kDevice, 256), y(Memory::kDevice, 256), out(Memory::kDevice, 256);
  TensorView args[3] = {x.view(256), y.view(256), out.view(256)};
  CallTimer profiler({&steady_ticks, 1.0});
  std::vector<ex::delegate::TimedCall> timed;
  const bool with_record = state.range(0) != 0;
  std::uint64_t sequence = 0;
  int queued = 0;
  for (auto _ : state) {
    ex::CudaStreamGuard guard(bench_stream());
    if (with_record) {
      std::unique_ptr<CallMarks> marks = profiler.take_marks();
      CallRecord record;
      record.marks = marks.get();
      require(session.execute(args, 3, &record), "execute");
      profiler.finish(std::move(marks), record, ++sequence, /*ok=*/true);
      timed.clear();
      (void)profiler.collect(timed);
    } else {
      require(session.execute(args, 3), "execute");
    }
    drain_every_256(state, bench_stream(), queued);
  }
  cudaStreamSynchronize(bench_stream());
}
BENCHMARK(BM_SessionCallWithRecord)->ArgName("record")->Arg(0)->Arg(1);

}  // namespace
}  // namespace trtet_bench
