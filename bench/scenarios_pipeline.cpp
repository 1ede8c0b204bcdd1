// P3h (issue 15 item 4): pipelined host I/O. Back-to-back calls with 1 MiB of pinned input and
// output each, from N threads on their own streams calling one session: the share of the bound
// set by copies and compute overlapped (Note [pipelined calls] in src/delegate/session.cpp).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
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

}  // namespace

// The bound per call is the longest of the three pieces of a call measured alone on one stream by
// events (the H2D of 1 MiB, the engine, the D2H of 1 MiB), each back to back: with copies in, copies
// out and engines of successive calls overlapped, calls cannot come faster than that. Then 1 to 8
// threads, each on its own stream under a CudaStreamGuard, make back-to-back calls (a fixed total
// split between them) on one session, each call returning with its pinned output written; wall
// time per call against the bound. Whole-call ordering (before pipelining) gives at best the
// serial sum, printed for contrast.
void p3h_pipelined_host_io(const Config& config, std::vector<Row>& rows) {
  constexpr std::size_t kBytes = 1u << 20;
  const std::size_t n = kBytes / sizeof(float);
  const SpinOptions options{132, 128, 0, 20'000, 1, static_cast<std::int64_t>(n)};  // about 20 us
  auto session = spin_session(options);
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

  auto call = [&](int t) {
    TensorView args[2] = {ios[t]->in.view(n), ios[t]->out.view(n)};
    ex::CudaStreamGuard guard(streams[t]);
    require(session->execute(args, 2), "P3h execute");  // pinned output: written on return
  };
  // Back-to-back calls from `threads` threads, `total` calls in all: wall microseconds per call.
  auto run = [&](int threads, int total) {
    const int per_thread = total / threads;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        for (int i = 0; i < per_thread; ++i) call(t);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& thread : pool) thread.join();
    return micros_since(start) / (per_thread * threads);
  };

  const int total = std::max(840, 2 * config.calls) / 840 * 840;  // divisible by 1 to 8 threads
  std::vector<double> per_call(kMaxThreads + 1, 0.0);
  int best = 1;
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    run(threads, 12 * threads);  // warm-up: staging slots sized, events pooled, threads' streams used
    per_call[threads] = run(threads, total);
    if (per_call[threads] < per_call[best]) best = threads;
  }
  // Every thread's output of one more call, poisoned first, is right.
  auto check_outputs = [&](const char* what) {
    for (int t = 0; t < kMaxThreads; ++t) {
      std::fill(ios[t]->out.data(), ios[t]->out.data() + n, -1.0f);
      call(t);
      for (std::size_t i = 0; i < n; i += 1021) {
        if (ios[t]->out.data()[i] != 2.0f * ios[t]->in.data()[i]) {
          std::fprintf(stderr, "P3h (%s): thread %d: wrong output at %zu\n", what, t, i);
          std::exit(4);
        }
      }
    }
  };
  check_outputs("2 staging slots");
  const ex::delegate::SessionStats stats = session->stats();
  const double share = bound / per_call[best];

  // The same with a third staging slot (SessionOptions::staging_slots), at 2 to 6 threads: each
  // call's copies in and its engine then wait for a call three back, not two. A detail line only.
  constexpr int kThreeSlotsMaxThreads = 6;
  ex::delegate::SessionOptions three_slots;
  three_slots.staging_slots = 3;
  session = spin_session(options, three_slots);  // `call` uses it from here on
  std::vector<double> per_call_three(kThreeSlotsMaxThreads + 1, 0.0);
  for (int threads = 2; threads <= kThreeSlotsMaxThreads; ++threads) {
    run(threads, 12 * threads);
    per_call_three[threads] = run(threads, total);
  }
  check_outputs("3 staging slots");

  std::printf("P3h: 1 MiB pinned in + out, a %.0f us engine: alone H2D %.2f us, engine %.2f us, D2H %.2f us; bound "
              "%.2f us/call, serial sum %.2f us/call (share %.1f %%)\n",
              options.spin_ns / 1000.0, h2d_us, engine_us, d2h_us, bound, serial, 100 * bound / serial);
  std::vector<std::string> csv;
  csv.push_back(format("alone_h2d,,%.3f,", h2d_us));
  csv.push_back(format("alone_engine,,%.3f,", engine_us));
  csv.push_back(format("alone_d2h,,%.3f,", d2h_us));
  csv.push_back(format("bound,,%.3f,1.0", bound));
  csv.push_back(format("serial_sum,,%.3f,%.4f", serial, bound / serial));
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    std::printf("    %d thread(s) on their own streams: %8.2f us/call, share of the bound %5.1f %%%s\n", threads,
                per_call[threads], 100 * bound / per_call[threads], threads == best ? "  (best)" : "");
    csv.push_back(format("threads,%d,%.3f,%.4f", threads, per_call[threads], bound / per_call[threads]));
  }
  std::printf("    3 staging slots:");
  for (int threads = 2; threads <= kThreeSlotsMaxThreads; ++threads) {
    std::printf(" %d thr %.2f us (%.1f %%)%s", threads, per_call_three[threads], 100 * bound / per_call_three[threads],
                threads < kThreeSlotsMaxThreads ? "," : "\n");
    csv.push_back(format("three_slots,%d,%.3f,%.4f", threads, per_call_three[threads], bound / per_call_three[threads]));
  }
  std::printf("    %d calls per thread count; session: %llu calls waited outside the lock, %llu waited on the GPU "
              "for another stream's call, %llu waited for the whole of every earlier call\n",
              total, static_cast<unsigned long long>(stats.unlocked_waits),
              static_cast<unsigned long long>(stats.cross_stream_waits),
              static_cast<unsigned long long>(stats.whole_call_waits));  // the 2-slot session's
  append_csv(config.out_dir + "/p3h_pipelined_host_io.csv", "mode,threads,us_per_call,share_of_bound", csv);
  rows.push_back({"P3h", "back-to-back calls, 1 MiB pinned in + out, 20 us engine: share of the bound",
                  format("%.1f %% (%d thr)", 100 * share, best),
                  format("bound %.1f us, serial %.0f %%", bound, 100 * bound / serial), share, ">= 0.95",
                  share >= 0.95});
  session.reset();
  for (cudaStream_t stream : streams) require_cuda(cudaStreamDestroy(stream), "destroy");
}

}  // namespace trtet_bench
