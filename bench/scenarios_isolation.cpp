// isolation_memory_bound: isolation at the physical limit. Green contexts partition SMs, not HBM or
// L2, so a latency-critical kernel on 32 SMs slows down beside a memory-bound neighbour on the
// other SMs even without the delegate. The row asks whether the delegate adds to that: the
// isolation scenario's victim and a memory-bound neighbour, both through the delegate, against the
// same two kernels launched directly on the same two green streams.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "green/split.h"
#include "isolation.h"
#include "scenarios.h"

namespace trtet_bench {
namespace {

using ex::delegate::TensorView;

/// Keeps `stream` busy from its own thread with `enqueue_one`, a few calls queued ahead so the
/// stream never drains between calls, until stop().
class Neighbour {
 public:
  Neighbour(cudaStream_t stream, std::function<void()> enqueue_one) : stream_(stream), enqueue_(std::move(enqueue_one)) {
    for (cudaEvent_t& event : ring_) {
      require_cuda(cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming), "event");
    }
  }
  ~Neighbour() {
    stop();
    for (cudaEvent_t event : ring_) cudaEventDestroy(event);
  }
  Neighbour(const Neighbour&) = delete;  // owns a thread
  Neighbour& operator=(const Neighbour&) = delete;

  void start() {
    stop_ = false;
    started_ = Clock::now();
    thread_ = std::thread([this] {
      int queued = 0;
      while (!stop_.load()) {
        cudaEvent_t slot = ring_[static_cast<std::size_t>(queued) % ring_.size()];
        if (queued >= static_cast<int>(ring_.size())) require_cuda(cudaEventSynchronize(slot), "neighbour wait");
        enqueue_();
        require_cuda(cudaEventRecord(slot, stream_), "neighbour record");
        ++queued;
      }
      calls_ += queued;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  /// Stops queuing and waits for what was queued; adds the time it ran to seconds().
  void stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
    require_cuda(cudaStreamSynchronize(stream_), "neighbour sync");
    seconds_ += micros_since(started_) * 1e-6;
  }
  int calls() const noexcept { return calls_; }
  double seconds() const noexcept { return seconds_; }

 private:
  cudaStream_t stream_;
  std::function<void()> enqueue_;
  std::array<cudaEvent_t, 3> ring_{};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  Clock::time_point started_;
  int calls_ = 0;
  double seconds_ = 0;
};

/// `calls` host times of `call` (which returns once the victim's work is complete), after 50 warm-ups.
template <typename Call>
void sample(int calls, Call&& call, std::vector<double>& samples) {
  for (int i = 0; i < 50; ++i) call();
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    call();
    samples.push_back(micros_since(start));
  }
}

}  // namespace

void isolation_memory_bound(const Config& config, std::vector<Row>& rows) {
  namespace green = ex::green;
  const IsolationOptions defaults;
  auto parts = green::split_device(0, green::SplitRequest::counts({defaults.victim_sms}, /*remainder=*/true));
  require(parts.status(), "isolation_memory_bound split");
  auto victim_stream = (*parts)[0].context.make_stream();
  auto neighbour_stream = (*parts)[1].context.make_stream();
  require(victim_stream.status(), "isolation_memory_bound victim stream");
  require(neighbour_stream.status(), "isolation_memory_bound neighbour stream");
  const unsigned neighbour_sms = (*parts)[1].granted_sms();

  // The victim: isolation's latency-critical engine and tensors. The neighbour: the same engine
  // with no spin over 256 MiB in and 256 MiB out, at full occupancy of its SMs: a grid-stride scale
  // that streams through HBM (L2 holds 50 MB) and does nothing else.
  const std::size_t victim_n = 4096;
  const std::size_t neighbour_n = std::size_t{64} << 20;
  const SpinOptions memory_bound{static_cast<int>(8 * neighbour_sms), 256, 0, 0, 1,
                                 static_cast<std::int64_t>(neighbour_n)};
  const double neighbour_bytes = 2.0 * static_cast<double>(neighbour_n * sizeof(float));
  auto victim = spin_session(defaults.victim);
  auto neighbour = spin_session(memory_bound);
  Buffer victim_x(Memory::kDevice, victim_n), victim_out(Memory::kDevice, victim_n);
  Buffer neighbour_x(Memory::kDevice, neighbour_n), neighbour_out(Memory::kDevice, neighbour_n);
  TensorView victim_args[2] = {victim_x.view(victim_n), victim_out.view(victim_n)};
  TensorView neighbour_args[2] = {neighbour_x.view(neighbour_n), neighbour_out.view(neighbour_n)};

  // Each condition's victim call: host time from the call to its stream's completion.
  auto delegate_victim = [&] {
    {
      ex::CudaStreamGuard guard(*victim_stream);
      require(victim->execute(victim_args, 2), "isolation_memory_bound victim execute");
    }
    require_cuda(cudaStreamSynchronize(*victim_stream), "isolation_memory_bound victim sync");
  };
  auto raw_victim = [&] {
    require(launch_spin_scale(victim_x.data(), victim_out.data(), static_cast<std::int64_t>(victim_n), defaults.victim,
                              *victim_stream),
            "isolation_memory_bound victim kernel");
    require_cuda(cudaStreamSynchronize(*victim_stream), "isolation_memory_bound victim sync");
  };
  Neighbour delegate_load(*neighbour_stream, [&] {
    ex::CudaStreamGuard guard(*neighbour_stream);
    require(neighbour->execute(neighbour_args, 2), "isolation_memory_bound neighbour execute");
  });
  Neighbour raw_load(*neighbour_stream, [&] {
    require(launch_spin_scale(neighbour_x.data(), neighbour_out.data(), static_cast<std::int64_t>(neighbour_n),
                              memory_bound, *neighbour_stream),
            "isolation_memory_bound neighbour kernel");
  });

  // Rounds of the four conditions, the delegate pair first in even rounds and the raw pair first in
  // odd ones, so drift over the run falls on both alike. Samples of all rounds are pooled.
  constexpr int kRounds = 4;
  std::vector<double> delegate_alone, delegate_beside, raw_alone, raw_beside;
  auto run_pair = [&](auto& victim_call, Neighbour& load, std::vector<double>& alone, std::vector<double>& beside) {
    sample(config.calls, victim_call, alone);
    load.start();
    sample(config.calls, victim_call, beside);
    load.stop();
  };
  for (int round = 0; round < kRounds; ++round) {
    if (round % 2 == 0) {
      run_pair(delegate_victim, delegate_load, delegate_alone, delegate_beside);
      run_pair(raw_victim, raw_load, raw_alone, raw_beside);
    } else {
      run_pair(raw_victim, raw_load, raw_alone, raw_beside);
      run_pair(delegate_victim, delegate_load, delegate_alone, delegate_beside);
    }
  }

  const Percentiles da = percentiles(delegate_alone), db = percentiles(delegate_beside), ra = percentiles(raw_alone),
                    rb = percentiles(raw_beside);
  auto gbps = [&](const Neighbour& load) { return load.calls() * neighbour_bytes / load.seconds() / 1e9; };
  const double ratio = db.p99 / rb.p99;
  std::printf("isolation_memory_bound: victim (isolation's: %d blocks spinning %lld us) on %u SMs, beside a memory-bound neighbour on %u SMs "
              "(grid-stride scale, 256 MiB in + 256 MiB out per call); %d rounds x %d calls per condition, interleaved\n",
              defaults.victim.blocks, static_cast<long long>(defaults.victim.spin_ns / 1000), (*parts)[0].granted_sms(),
              neighbour_sms, kRounds, config.calls);
  std::printf("    %-30s p50 %8.1f us   p99 %8.1f us\n", "delegate, alone", da.p50, da.p99);
  std::printf("    %-30s p50 %8.1f us   p99 %8.1f us   (neighbour: %d calls, %.0f GB/s)\n", "delegate, beside neighbour",
              db.p50, db.p99, delegate_load.calls(), gbps(delegate_load));
  std::printf("    %-30s p50 %8.1f us   p99 %8.1f us\n", "raw kernels, alone", ra.p50, ra.p99);
  std::printf("    %-30s p50 %8.1f us   p99 %8.1f us   (neighbour: %d calls, %.0f GB/s)\n", "raw kernels, beside neighbour",
              rb.p50, rb.p99, raw_load.calls(), gbps(raw_load));
  std::printf("isolation_memory_bound: physical slowdown (p99 beside / alone): raw %.3f, delegate %.3f; delegate pair / raw pair p99 %.3f\n",
              rb.p99 / ra.p99, db.p99 / da.p99, ratio);
  write_latency_samples(config.out_dir + "/isolation_memory_bound_samples.csv",
                        "isolation_memory_bound: victim latency alone and beside a memory-bound neighbour, delegate and raw kernels",
                        {{"delegate alone", delegate_alone},
                         {"delegate beside", delegate_beside},
                         {"raw alone", raw_alone},
                         {"raw beside", raw_beside}});
  append_csv(config.out_dir + "/isolation_memory_bound.csv", "condition,p50_us,p99_us,mean_us,calls,neighbour_GBps",
             {format("delegate alone,%.2f,%.2f,%.2f,%zu,", da.p50, da.p99, da.mean, da.n),
              format("delegate beside,%.2f,%.2f,%.2f,%zu,%.1f", db.p50, db.p99, db.mean, db.n, gbps(delegate_load)),
              format("raw alone,%.2f,%.2f,%.2f,%zu,", ra.p50, ra.p99, ra.mean, ra.n),
              format("raw beside,%.2f,%.2f,%.2f,%zu,%.1f", rb.p50, rb.p99, rb.mean, rb.n, gbps(raw_load))});
  rows.push_back({"isolation_memory_bound.vs_raw_p99", "beside a memory-bound neighbour, green: p99 delegate / raw kernels", format("%.1f us", db.p99),
                  format("%.1f us (alone %.1f / %.1f)", rb.p99, da.p99, ra.p99), ratio, "<= 1.03", ratio <= 1.03});
}

}  // namespace trtet_bench
