// pipelined_host_io: back-to-back calls with 1 MiB of pinned input and output each, from N threads
// on their own streams calling one session: the share of the bound set by copies and compute
// overlapped (Note [pipelined calls] in src/session/call_ordering.cpp), of the same pieces
// measured overlapped, and the same call pattern in raw CUDA without the delegate.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "scenarios.h"

namespace trtet_bench {
namespace {

using ex::delegate::TensorView;

constexpr int kMaxThreads = 8;

struct ThreadIo {
  explicit ThreadIo(std::size_t n) : in(Memory::kPinned, n), out(Memory::kPinned, n) {
    for (std::size_t i = 0; i < n; ++i) in.data()[i] = static_cast<float>(i % 1021) * 0.25f;
  }
  Buffer in, out;
};

/// What one thread of the raw pipeline owns beside its ThreadIo: device input and output of its
/// own (nothing staged, nothing shared), the event its engine records (which the next thread's
/// engine waits on) and the event its call's end records (which the thread waits on).
struct RawPipelineIo {
  explicit RawPipelineIo(std::size_t n) : device_in(Memory::kDevice, n), device_out(Memory::kDevice, n) {
    require_cuda(cudaEventCreateWithFlags(&engine_done, cudaEventDisableTiming), "event");
    require_cuda(cudaEventCreateWithFlags(&call_done, cudaEventDisableTiming), "event");
  }
  ~RawPipelineIo() {
    cudaEventDestroy(engine_done);
    cudaEventDestroy(call_done);
  }
  RawPipelineIo(const RawPipelineIo&) = delete;             // owns events
  RawPipelineIo& operator=(const RawPipelineIo&) = delete;

  Buffer device_in, device_out;
  cudaEvent_t engine_done = nullptr;
  cudaEvent_t call_done = nullptr;
};

}  // namespace

// The bound per call is the longest of the three pieces of a call measured alone on one stream by
// events (the H2D of 1 MiB, the engine, the D2H of 1 MiB), each back to back: with copies in, copies
// out and engines of successive calls overlapped, calls cannot come faster than that. Then 1 to 8
// threads, each on its own stream under a CudaStreamGuard, make back-to-back calls (a fixed total
// split between them) on one session, each call returning with its pinned output written; wall
// time per call against the bound. Whole-call ordering (before pipelining) gives at best the
// serial sum, printed for contrast.
//
// Two measured references say what bounds the delegate where it misses the goal. The overlapped
// bound: the three pieces at once, each back to back on a stream of its own with no dependencies
// between them: the floor per call when copies in, engines and copies out overlap. H2D and D2H
// share the link, each slower beside the other than alone, so this floor is above the bound
// alone. The raw pipeline: the delegate's call pattern (synchronous calls from N threads, engines
// ordered one after the other) in raw CUDA with nothing staged or shared: what the pattern costs
// on this GPU, apart from what the delegate adds.
void pipelined_host_io(const Config& config, std::vector<Row>& rows) {
  constexpr std::size_t kBytes = 1u << 20;
  const std::size_t n = kBytes / sizeof(float);
  const SpinOptions options{132, 128, 0, 20'000, 1, static_cast<std::int64_t>(n)};  // about 20 us
  ex::delegate::SessionOptions timed_lock;
  timed_lock.time_the_lock = true;  // SessionStats::lock_wait_ns, lock_held_ns: what the lock costs a call
  auto session = spin_session(options, timed_lock);
  cudaStream_t streams[kMaxThreads] = {};
  for (cudaStream_t& stream : streams) require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  std::vector<std::unique_ptr<ThreadIo>> ios;
  for (int t = 0; t < kMaxThreads; ++t) ios.push_back(std::make_unique<ThreadIo>(n));
  Buffer device_in(Memory::kDevice, n), device_out(Memory::kDevice, n);

  // The three pieces alone, back to back on one stream.
  const cudaStream_t s0 = streams[0];
  const int reps = std::max(200, config.calls);
  const double h2d_us = gpu_us_per_call(s0, reps, [&] {
    require_cuda(cudaMemcpyAsync(device_in.data(), ios[0]->in.data(), kBytes, cudaMemcpyHostToDevice, s0), "h2d");
  });
  const double engine_us = gpu_us_per_call(s0, reps, [&] {
    require(launch_spin_scale(device_in.data(), device_out.data(), static_cast<std::int64_t>(n), options, s0), "engine");
  });
  const double d2h_us = gpu_us_per_call(s0, reps, [&] {
    require_cuda(cudaMemcpyAsync(ios[0]->out.data(), device_out.data(), kBytes, cudaMemcpyDeviceToHost, s0), "d2h");
  });
  const double bound = std::max({h2d_us, engine_us, d2h_us});
  const double serial = h2d_us + engine_us + d2h_us;

  // The three pieces overlapped: per iteration one H2D on stream A, one engine on stream B and one
  // D2H on stream C, each on buffers of its own, `reps` iterations back to back. B and C start on
  // A's start event and A's stop event follows the ends of B and C, so the events span all three;
  // the time per iteration is the floor per call with the pieces overlapped. Right after the pieces
  // alone, which warmed the kernel and both copy directions.
  const cudaStream_t h2d_stream = streams[0], engine_stream = streams[1], d2h_stream = streams[2];
  Buffer engine_in(Memory::kDevice, n), engine_out(Memory::kDevice, n), d2h_source(Memory::kDevice, n);
  Buffer d2h_destination(Memory::kPinned, n);
  double overlapped = 0;
  {
    cudaEvent_t start = nullptr, stop = nullptr, engines_done = nullptr, d2hs_done = nullptr;
    require_cuda(cudaEventCreate(&start), "event");
    require_cuda(cudaEventCreate(&stop), "event");
    require_cuda(cudaEventCreateWithFlags(&engines_done, cudaEventDisableTiming), "event");
    require_cuda(cudaEventCreateWithFlags(&d2hs_done, cudaEventDisableTiming), "event");
    for (cudaStream_t stream : {h2d_stream, engine_stream, d2h_stream}) {
      require_cuda(cudaStreamSynchronize(stream), "sync");
    }
    require_cuda(cudaEventRecord(start, h2d_stream), "record");
    require_cuda(cudaStreamWaitEvent(engine_stream, start, 0), "wait");
    require_cuda(cudaStreamWaitEvent(d2h_stream, start, 0), "wait");
    for (int i = 0; i < reps; ++i) {
      require_cuda(cudaMemcpyAsync(device_in.data(), ios[0]->in.data(), kBytes, cudaMemcpyHostToDevice, h2d_stream),
                   "h2d");
      require(launch_spin_scale(engine_in.data(), engine_out.data(), static_cast<std::int64_t>(n), options,
                                engine_stream),
              "engine");
      require_cuda(
          cudaMemcpyAsync(d2h_destination.data(), d2h_source.data(), kBytes, cudaMemcpyDeviceToHost, d2h_stream),
          "d2h");
    }
    require_cuda(cudaEventRecord(engines_done, engine_stream), "record");
    require_cuda(cudaEventRecord(d2hs_done, d2h_stream), "record");
    require_cuda(cudaStreamWaitEvent(h2d_stream, engines_done, 0), "wait");
    require_cuda(cudaStreamWaitEvent(h2d_stream, d2hs_done, 0), "wait");
    require_cuda(cudaEventRecord(stop, h2d_stream), "record");
    require_cuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    require_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    overlapped = 1000.0 * ms / reps;
    for (cudaEvent_t event : {start, stop, engines_done, d2hs_done}) cudaEventDestroy(event);
  }

  auto call = [&](int t) {
    TensorView args[2] = {ios[t]->in.view(n), ios[t]->out.view(n)};
    ex::CudaStreamGuard guard(streams[t]);
    require(session->execute(args, 2), "pipelined_host_io execute");  // pinned output: written on return
  };
  // The raw pipeline's call, the delegate's pattern without the delegate: the copy in on the
  // thread's stream; then, under one lock for all threads (one execution context runs one enqueue
  // at a time), the engine after the previous call's engine (a wait on the event that engine
  // recorded: the wait takes the record as it is when queued, so its thread may record it again
  // for a later call), the copy out and the call's end event; then, outside the lock, the wait
  // for that event (the output is written on return, as the delegate's contract for host outputs).
  std::vector<std::unique_ptr<RawPipelineIo>> raw_ios;
  for (int t = 0; t < kMaxThreads; ++t) raw_ios.push_back(std::make_unique<RawPipelineIo>(n));
  std::mutex engine_order;
  cudaEvent_t last_engine_done = nullptr;  // the event of the latest engine queued, under engine_order
  std::uint64_t raw_lock_wait_ns = 0, raw_lock_held_ns = 0;  // as the session's, under engine_order
  auto raw_call = [&](int t) {
    RawPipelineIo& raw = *raw_ios[t];
    const cudaStream_t stream = streams[t];
    require_cuda(cudaMemcpyAsync(raw.device_in.data(), ios[t]->in.data(), kBytes, cudaMemcpyHostToDevice, stream),
                 "h2d");
    {
      const auto asked = Clock::now();
      const std::lock_guard<std::mutex> lock(engine_order);
      const auto taken = Clock::now();
      raw_lock_wait_ns += static_cast<std::uint64_t>(std::chrono::nanoseconds(taken - asked).count());
      if (last_engine_done != nullptr) require_cuda(cudaStreamWaitEvent(stream, last_engine_done, 0), "wait");
      require(
          launch_spin_scale(raw.device_in.data(), raw.device_out.data(), static_cast<std::int64_t>(n), options, stream),
          "engine");
      require_cuda(cudaEventRecord(raw.engine_done, stream), "record");
      last_engine_done = raw.engine_done;
      require_cuda(cudaMemcpyAsync(ios[t]->out.data(), raw.device_out.data(), kBytes, cudaMemcpyDeviceToHost, stream),
                   "d2h");
      require_cuda(cudaEventRecord(raw.call_done, stream), "record");
      raw_lock_held_ns += static_cast<std::uint64_t>(std::chrono::nanoseconds(Clock::now() - taken).count());
    }
    require_cuda(cudaEventSynchronize(raw.call_done), "sync");
  };
  // Back-to-back calls of `one_call` (call or raw_call) from `threads` threads, `total` calls in all:
  // wall microseconds per call.
  auto run = [&](auto&& one_call, int threads, int total) {
    const int per_thread = total / threads;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        for (int i = 0; i < per_thread; ++i) one_call(t);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& thread : pool) thread.join();
    return micros_since(start) / (per_thread * threads);
  };

  const int total = std::max(840, 2 * config.calls) / 840 * 840;  // divisible by 1 to 8 threads
  // Per thread count 1 to 8, the time per call of `one_call` after a warm-up (threads' streams
  // used; for the delegate also staging slots sized, events pooled); `best` is set to the thread
  // count with the least. `lock_ns` reads the lock's (wait, hold) nanoseconds so far; `lock_us`
  // gets each thread count's per call.
  struct LockUs {
    double wait = 0, held = 0;
  };
  auto run_thread_counts = [&](auto&& one_call, int& best, auto&& lock_ns, std::vector<LockUs>& lock_us) {
    std::vector<double> per_call(kMaxThreads + 1, 0.0);
    lock_us.assign(kMaxThreads + 1, LockUs{});
    best = 1;
    for (int threads = 1; threads <= kMaxThreads; ++threads) {
      run(one_call, threads, 12 * threads);
      const std::pair<std::uint64_t, std::uint64_t> before = lock_ns();
      per_call[threads] = run(one_call, threads, total);
      const std::pair<std::uint64_t, std::uint64_t> after = lock_ns();
      const int calls = total / threads * threads;
      lock_us[threads] = {static_cast<double>(after.first - before.first) / 1e3 / calls,
                          static_cast<double>(after.second - before.second) / 1e3 / calls};
      if (per_call[threads] < per_call[best]) best = threads;
    }
    return per_call;
  };
  // Every thread's output of one more call of `one_call`, poisoned first, is right.
  auto check_outputs = [&](auto&& one_call, const char* what) {
    for (int t = 0; t < kMaxThreads; ++t) {
      std::fill(ios[t]->out.data(), ios[t]->out.data() + n, -1.0f);
      one_call(t);
      for (std::size_t i = 0; i < n; i += 1021) {
        if (ios[t]->out.data()[i] != 2.0f * ios[t]->in.data()[i]) {
          std::fprintf(stderr, "pipelined_host_io (%s): thread %d: wrong output at %zu\n", what, t, i);
          std::exit(4);
        }
      }
    }
  };
  int raw_best = 1;
  std::vector<LockUs> raw_lock_us, lock_us;
  const std::vector<double> raw_per_call = run_thread_counts(
      raw_call, raw_best, [&] { return std::make_pair(raw_lock_wait_ns, raw_lock_held_ns); }, raw_lock_us);
  check_outputs(raw_call, "raw pipeline");

  // The session's lock so far (SessionStats), for whichever session `call` uses.
  auto session_lock_ns = [&] {
    const ex::delegate::SessionStats now = session->stats();
    return std::make_pair(now.lock_wait_ns, now.lock_held_ns);
  };
  int best = 1;
  const std::vector<double> per_call = run_thread_counts(call, best, session_lock_ns, lock_us);
  check_outputs(call, "the default's 3 staging slots");
  const ex::delegate::SessionStats stats = session->stats();
  const double share = bound / per_call[best];
  const double overlapped_share = overlapped / per_call[best];
  const double delegate_vs_raw = per_call[best] / raw_per_call[raw_best];

  // The same with a lock that sleeps at once (SessionOptions::lock_spin_us 0; the default spins 50 us
  // first, Note [a lock that spins first]): what the spin buys, in the same run. A detail line.
  ex::delegate::SessionOptions sleeping_lock = timed_lock;
  sleeping_lock.lock_spin_us = 0;
  session = spin_session(options, sleeping_lock);  // `call` uses it from here on
  int sleeping_best = 1;
  std::vector<LockUs> sleeping_lock_us;
  const std::vector<double> per_call_sleeping = run_thread_counts(call, sleeping_best, session_lock_ns, sleeping_lock_us);
  check_outputs(call, "a lock that sleeps at once");

  // The same with two staging slots (SessionOptions::staging_slots; the default is 3), at 2 to 6
  // threads: each call's copies in and its engine then wait for a call two back, not three. A
  // detail line only, for what the third slot buys.
  constexpr int kTwoSlotsMaxThreads = 6;
  ex::delegate::SessionOptions two_slots;
  two_slots.staging_slots = 2;
  session = spin_session(options, two_slots);  // `call` uses it from here on
  std::vector<double> per_call_two(kTwoSlotsMaxThreads + 1, 0.0);
  for (int threads = 2; threads <= kTwoSlotsMaxThreads; ++threads) {
    run(call, threads, 12 * threads);
    per_call_two[threads] = run(call, threads, total);
  }
  check_outputs(call, "2 staging slots");

  std::printf("pipelined_host_io: 1 MiB pinned in + out, a %.0f us engine: alone H2D %.2f us, engine %.2f us, D2H %.2f us; bound "
              "%.2f us/call, serial sum %.2f us/call (share %.1f %%)\n",
              options.spin_ns / 1000.0, h2d_us, engine_us, d2h_us, bound, serial, 100 * bound / serial);
  std::printf("    overlapped bound (H2D, engine, D2H at once on three streams, no dependencies): %.2f us/call; "
              "the bound alone is %.1f %% of it\n",
              overlapped, 100 * bound / overlapped);
  std::vector<std::string> csv;
  csv.push_back(format("alone_h2d,,%.3f,", h2d_us));
  csv.push_back(format("alone_engine,,%.3f,", engine_us));
  csv.push_back(format("alone_d2h,,%.3f,", d2h_us));
  csv.push_back(format("bound,,%.3f,1.0", bound));
  csv.push_back(format("serial_sum,,%.3f,%.4f", serial, bound / serial));
  csv.push_back(format("overlapped_bound,,%.3f,%.4f", overlapped, bound / overlapped));
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    std::printf("    %d thread(s) on their own streams: %8.2f us/call, share of the bound %5.1f %%; lock held %.2f, "
                "waited %.2f us/call%s\n",
                threads, per_call[threads], 100 * bound / per_call[threads], lock_us[threads].held,
                lock_us[threads].wait, threads == best ? "  (best)" : "");
    csv.push_back(format("threads,%d,%.3f,%.4f", threads, per_call[threads], bound / per_call[threads]));
  }
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    std::printf("    raw pipeline (no delegate), %d thread(s): %8.2f us/call, share of the bound %5.1f %%; lock held "
                "%.2f, waited %.2f us/call%s\n",
                threads, raw_per_call[threads], 100 * bound / raw_per_call[threads], raw_lock_us[threads].held,
                raw_lock_us[threads].wait, threads == raw_best ? "  (best)" : "");
    csv.push_back(format("raw_pipeline,%d,%.3f,%.4f", threads, raw_per_call[threads], bound / raw_per_call[threads]));
  }
  std::printf("    delegate best %.2f us/call (%d thr): %.1f %% of the overlapped bound; delegate / raw pipeline best "
              "(%.2f us, %d thr) %.3f\n",
              per_call[best], best, 100 * overlapped_share, raw_per_call[raw_best], raw_best, delegate_vs_raw);
  std::printf("    a lock that sleeps at once (lock_spin_us 0):");
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    std::printf(" %d thr %.2f us (held %.2f)%s", threads, per_call_sleeping[threads], sleeping_lock_us[threads].held,
                threads < kMaxThreads ? "," : "\n");
    csv.push_back(format("sleeping_lock,%d,%.3f,%.4f", threads, per_call_sleeping[threads], bound / per_call_sleeping[threads]));
  }
  std::printf("    with it: best %.2f us/call (%d thr), delegate / raw pipeline best %.3f\n", per_call_sleeping[sleeping_best],
              sleeping_best, per_call_sleeping[sleeping_best] / raw_per_call[raw_best]);
  std::printf("    2 staging slots:");
  for (int threads = 2; threads <= kTwoSlotsMaxThreads; ++threads) {
    std::printf(" %d thr %.2f us (%.1f %%)%s", threads, per_call_two[threads], 100 * bound / per_call_two[threads],
                threads < kTwoSlotsMaxThreads ? "," : "\n");
    csv.push_back(format("two_slots,%d,%.3f,%.4f", threads, per_call_two[threads], bound / per_call_two[threads]));
  }
  std::printf("    %d calls per thread count; session: %llu calls waited outside the lock, %llu waited on the GPU "
              "for another stream's call, %llu waited for the whole of every earlier call\n",
              total, static_cast<unsigned long long>(stats.unlocked_waits),
              static_cast<unsigned long long>(stats.cross_stream_waits),
              static_cast<unsigned long long>(stats.whole_call_waits));  // the default session's
  append_csv(config.out_dir + "/pipelined_host_io.csv", "mode,threads,us_per_call,share_of_bound", csv);
  rows.push_back({"pipelined_host_io.vs_bound", "back-to-back calls, 1 MiB pinned in + out, 20 us engine: share of the bound",
                  format("%.1f %% (%d thr)", 100 * share, best),
                  format("bound %.1f us, overlapped %.1f us", bound, overlapped), share, ">= 0.95", share >= 0.95});
  rows.push_back({"pipelined_host_io.vs_overlapped_bound", "the same: share of the overlapped bound (H2D, engine, D2H at once)",
                  format("%.2f us (%d thr)", per_call[best], best), format("overlapped %.2f us", overlapped),
                  overlapped_share, ">= 0.95", overlapped_share >= 0.95});
  rows.push_back({"pipelined_host_io.vs_raw", "delegate / raw pipeline (same pattern, no delegate), best thread count each",
                  format("%.2f us (%d thr)", per_call[best], best),
                  format("raw %.2f us (%d thr)", raw_per_call[raw_best], raw_best), delegate_vs_raw,
                  "<= 1.053 (raw's share >= 0.95)", delegate_vs_raw <= 1.0 / 0.95});
  session.reset();
  for (cudaStream_t stream : streams) require_cuda(cudaStreamDestroy(stream), "destroy");
}

}  // namespace trtet_bench
