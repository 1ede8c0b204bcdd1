// graph_wait_probe: which CUDA graph calls of the delegate's graph path wait for work queued on
// another stream, in raw CUDA with no code of the project in its path. Soak seed
// 7841946101269482128 (an aux-stream engine with delegate graphs) had a guarded device-only call
// return only after the gate holding its stream timed out; the call was the session's 17th call
// signature, so the graph cache (16 entries) evicted its least recently used entry, which held a
// graph: cudaGraphExecDestroy on the execute path (src/session/graph_cache.cpp, GraphCache::insert).
//
// A gate kernel (a one-thread spin on mapped host memory, at most 1000 ms) holds stream A, as the
// contract fuzzer's gate holds a caller's stream. With the gate closed, the probe times each call
// below, made on other streams of the same (primary) context, then opens the gate:
//   control      cudaFree of a 1 MiB buffer (documented to synchronize: must be seen waiting)
//   capture      thread-local capture on stream B of a fork/join across two auxiliary streams (the
//                aux-stream engine's enqueue: event record, waits, one kernel per stream)
//   instantiate  cudaGraphInstantiate of that graph
//   launch-first the exec's first cudaGraphLaunch, on stream C
//   launch-again its second launch, on C
//   update       cudaGraphExecUpdate of the idle exec to the same fork/join captured at other
//                addresses (a way to serve a new signature without destroying a graph)
//   launch-updated its launch after the update, on C
//   destroy-idle cudaGraphExecDestroy of that exec, its launches complete (C synchronized)
//   destroy-new  cudaGraphExecDestroy of an exec never launched
//   destroy-one-stream cudaGraphExecDestroy of a launched graph of one kernel on one stream
//   graph-destroy cudaGraphDestroy of the captured graph
// Each prints "graph-wait-probe: NAME: X ms (waited for the gate | returned at once)". Every kernel
// is launched once before any gate closes (lazy loading would make a first launch wait). Exits 0
// when every call succeeded and the control was seen waiting (the probe can see a wait); else 1.
// Not a gtest and not a ctest test.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdint>

namespace {

constexpr unsigned long long kGateTimeoutNs = 1000ull * 1000 * 1000;
constexpr double kWaitedMs = 500.0;  // a call this long waited for the gate (nothing else takes it)

__global__ void gate_kernel(const volatile unsigned long long* opened, unsigned long long ticket) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (*opened >= ticket) return;
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > kGateTimeoutNs) return;
  }
}

__global__ void scale_kernel(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("graph-wait-probe: FAILED: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

struct World {
  unsigned long long* opened = nullptr;      // host side of the gate's flag
  unsigned long long* opened_dev = nullptr;  // its device address
  unsigned long long ticket = 0;
  cudaStream_t a = nullptr, b = nullptr, c = nullptr, aux[2] = {nullptr, nullptr};
  cudaEvent_t fork = nullptr, join[2] = {nullptr, nullptr};
  float* data = nullptr;
};

constexpr int kN = 1 << 16;  // floats per kernel; the buffer holds 4 * kN (two engines' worth, offset by kN)

bool enqueue_engine(World& w, cudaStream_t stream, int offset = 0) {
  // The aux-stream engine's shape: fork to two auxiliary streams, a kernel on each, join back.
  if (!ok(cudaEventRecord(w.fork, stream), "cudaEventRecord(fork)")) return false;
  for (int i = 0; i < 2; ++i) {
    if (!ok(cudaStreamWaitEvent(w.aux[i], w.fork, 0), "cudaStreamWaitEvent(aux, fork)")) return false;
    scale_kernel<<<kN / 256, 256, 0, w.aux[i]>>>(w.data + offset + i * kN, kN);
    if (!ok(cudaGetLastError(), "launch on aux")) return false;
    if (!ok(cudaEventRecord(w.join[i], w.aux[i]), "cudaEventRecord(join)")) return false;
    if (!ok(cudaStreamWaitEvent(stream, w.join[i], 0), "cudaStreamWaitEvent(main, join)")) return false;
  }
  scale_kernel<<<kN / 256, 256, 0, stream>>>(w.data + offset + 2 * kN, kN);
  return ok(cudaGetLastError(), "launch on main");
}

/// Closes the gate on A, runs `op`, reports how long it took, opens the gate and waits for A.
template <class Op>
bool timed(World& w, const char* name, Op op, bool* waited) {
  ++w.ticket;
  gate_kernel<<<1, 1, 0, w.a>>>(w.opened_dev, w.ticket);
  if (!ok(cudaGetLastError(), "launching the gate")) return false;
  const auto start = std::chrono::steady_clock::now();
  const bool done = op();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  *reinterpret_cast<volatile unsigned long long*>(w.opened) = w.ticket;
  const bool synced = ok(cudaStreamSynchronize(w.a), "cudaStreamSynchronize(A)");
  if (!done || !synced) return false;
  *waited = ms >= kWaitedMs;
  std::printf("graph-wait-probe: %s: %.3f ms (%s)\n", name, ms, *waited ? "waited for the gate" : "returned at once");
  return true;
}

int run() {
  World w;
  if (!ok(cudaSetDevice(0), "cudaSetDevice")) return 1;
  if (!ok(cudaHostAlloc(reinterpret_cast<void**>(&w.opened), sizeof(unsigned long long), cudaHostAllocMapped),
          "cudaHostAlloc")) {
    return 1;
  }
  *w.opened = 0;
  if (!ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&w.opened_dev), w.opened, 0), "cudaHostGetDevicePointer")) {
    return 1;
  }
  for (cudaStream_t* s : {&w.a, &w.b, &w.c, &w.aux[0], &w.aux[1]}) {
    if (!ok(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  }
  for (cudaEvent_t* e : {&w.fork, &w.join[0], &w.join[1]}) {
    if (!ok(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate")) return 1;
  }
  if (!ok(cudaMalloc(reinterpret_cast<void**>(&w.data), 4 * kN * sizeof(float)), "cudaMalloc")) return 1;
  if (!ok(cudaMemset(w.data, 0, 4 * kN * sizeof(float)), "cudaMemset")) return 1;
  // Every kernel loaded before any gate closes: the gate (open), the engine's kernels eagerly.
  gate_kernel<<<1, 1, 0, w.a>>>(w.opened_dev, 0);
  if (!enqueue_engine(w, w.c)) return 1;
  if (!ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;

  bool all = true;
  bool waited = false;
  // One measured call; skipped (counted as a failure) once a handle it needs is missing.
  auto measure = [&](const char* name, bool have, auto op) {
    all = have && timed(w, name, op, &waited) && all;
  };
  auto check = [&](cudaError_t e, const char* what) { all = ok(e, what) && all; };

  void* scratch = nullptr;
  if (!ok(cudaMalloc(&scratch, 1 << 20), "cudaMalloc(control)")) return 1;
  measure("control (cudaFree of 1 MiB)", true, [&] { return ok(cudaFree(scratch), "cudaFree"); });
  const bool control = waited;

  cudaGraph_t graph = nullptr;
  measure("capture (thread-local, fork/join on two aux streams)", true, [&] {
    if (!ok(cudaStreamBeginCapture(w.b, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) return false;
    const bool enqueued = enqueue_engine(w, w.b);
    const bool ended = ok(cudaStreamEndCapture(w.b, &graph), "cudaStreamEndCapture");
    return enqueued && ended;
  });
  cudaGraphExec_t exec = nullptr;
  measure("instantiate", graph != nullptr,
          [&] { return ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"); });
  measure("launch-first", exec != nullptr, [&] { return ok(cudaGraphLaunch(exec, w.c), "cudaGraphLaunch"); });
  check(cudaStreamSynchronize(w.c), "cudaStreamSynchronize(C)");
  measure("launch-again", exec != nullptr, [&] { return ok(cudaGraphLaunch(exec, w.c), "cudaGraphLaunch"); });
  check(cudaStreamSynchronize(w.c), "cudaStreamSynchronize(C)");

  // The same engine at other addresses (the next signature), captured with the gate open.
  cudaGraph_t moved = nullptr;
  check(cudaStreamBeginCapture(w.b, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  all = enqueue_engine(w, w.b, kN) && all;
  check(cudaStreamEndCapture(w.b, &moved), "cudaStreamEndCapture");
  measure("update (cudaGraphExecUpdate of the idle exec to other addresses)", exec != nullptr && moved != nullptr, [&] {
    cudaGraphExecUpdateResultInfo info{};
    return ok(cudaGraphExecUpdate(exec, moved, &info), "cudaGraphExecUpdate");
  });
  measure("launch-updated", exec != nullptr, [&] { return ok(cudaGraphLaunch(exec, w.c), "cudaGraphLaunch"); });
  check(cudaStreamSynchronize(w.c), "cudaStreamSynchronize(C)");
  if (moved != nullptr) check(cudaGraphDestroy(moved), "cudaGraphDestroy");

  measure("destroy-idle (cudaGraphExecDestroy, launches complete)", exec != nullptr,
          [&] { return ok(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy"); });
  cudaGraphExec_t fresh = nullptr;
  if (graph != nullptr) check(cudaGraphInstantiate(&fresh, graph, 0), "cudaGraphInstantiate");
  measure("destroy-new (cudaGraphExecDestroy, never launched)", fresh != nullptr,
          [&] { return ok(cudaGraphExecDestroy(fresh), "cudaGraphExecDestroy"); });
  // A graph of one kernel on one stream (no fork/join), launched once and complete.
  cudaGraph_t single = nullptr;
  cudaGraphExec_t single_exec = nullptr;
  check(cudaStreamBeginCapture(w.b, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  scale_kernel<<<kN / 256, 256, 0, w.b>>>(w.data, kN);
  check(cudaStreamEndCapture(w.b, &single), "cudaStreamEndCapture");
  if (single != nullptr) check(cudaGraphInstantiate(&single_exec, single, 0), "cudaGraphInstantiate");
  if (single_exec != nullptr) check(cudaGraphLaunch(single_exec, w.c), "cudaGraphLaunch");
  check(cudaStreamSynchronize(w.c), "cudaStreamSynchronize(C)");
  measure("destroy-one-stream (cudaGraphExecDestroy of one kernel on one stream, launched)", single_exec != nullptr,
          [&] { return ok(cudaGraphExecDestroy(single_exec), "cudaGraphExecDestroy"); });
  if (single != nullptr) check(cudaGraphDestroy(single), "cudaGraphDestroy");
  measure("graph-destroy (cudaGraphDestroy)", graph != nullptr,
          [&] { return ok(cudaGraphDestroy(graph), "cudaGraphDestroy"); });
  if (!control) std::printf("graph-wait-probe: FAILED: the control did not wait: the probe cannot see a wait here\n");
  std::printf("graph-wait-probe: %s\n", all && control ? "done" : "FAILED");
  return all && control ? 0 : 1;
}

}  // namespace

int main() { return run(); }
