// host_staging: one call with a 64 MiB input and a 64 MiB output in host memory.
// host_staging.pinned: pinned, against pinned cudaMemcpy. host_staging.pageable: pageable, against
// the best that staging can do on this host, measured without the delegate: host threads copy
// chunks into pinned memory while cudaMemcpyAsync moves the chunks before them, and the reverse for
// the output. The parts of that limit (host copy rate per thread count, transfer rates alone, both
// ways at once, and beside a host copy) are printed with it.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/memory_pool.h"
#include "staging/host_copy_pool.h"
#include "staging/layout.h"
#include "scenarios.h"

namespace trtet_bench {
namespace {

using ex::delegate::TensorView;

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// Host times (us) of `runs` calls of `body` after 2 warm-ups, appended to `samples`.
template <typename Body>
void time_calls(int runs, Body&& body, std::vector<double>& samples) {
  for (int i = 0; i < runs + 2; ++i) {
    const auto start = Clock::now();
    body();
    if (i >= 2) samples.push_back(micros_since(start));
  }
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// Median host time (us) of 10 calls of `body` after 2 warm-ups: host_staging's measure throughout.
template <typename Body>
double median_us(Body&& body) {
  std::vector<double> samples;
  time_calls(10, body, samples);
  return median(samples);
}

double gb_per_s(double bytes, double us) { return bytes / (us * 1e-6) / 1e9; }

/// Thread counts from `wanted`, none above the host's hardware threads less one (as the delegate's
/// copy pool), without repeats.
std::vector<int> thread_counts(std::initializer_list<int> wanted) {
  const int most = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  std::vector<int> counts;
  for (int w : wanted) {
    const int count = std::min(w, most);
    if (std::find(counts.begin(), counts.end(), count) == counts.end()) counts.push_back(count);
  }
  return counts;
}

/// One phase's memcpy of `bytes` in slices, taken in order by a CopyCrew's threads. Slices
/// [0, ready) may be taken, so a caller can publish slices as their data arrives.
class CopyJob {
 public:
  CopyJob(void* to, const void* from, std::size_t bytes, std::size_t slice)
      : to_(static_cast<unsigned char*>(to)), from_(static_cast<const unsigned char*>(from)), bytes_(bytes),
        slice_(slice), count_((bytes + slice - 1) / slice), done_(new std::atomic<bool>[count_]) {}
  CopyJob(const CopyJob&) = delete;  // a crew points at it
  CopyJob& operator=(const CopyJob&) = delete;

  std::size_t size() const noexcept { return count_; }
  /// The index of the slice that starts at byte `offset`, or size() for the end.
  std::size_t slice_at(std::size_t offset) const noexcept { return (offset + slice_ - 1) / slice_; }
  /// Before a post: nothing copied, slices [0, ready) may be taken.
  void reset(std::size_t ready) noexcept {
    for (std::size_t i = 0; i < count_; ++i) done_[i].store(false, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    ready_.store(ready, std::memory_order_release);
  }
  void publish(std::size_t ready) noexcept { ready_.store(ready, std::memory_order_release); }
  /// Spins until slice `index` has been copied.
  void wait(std::size_t index) const noexcept {
    while (!done_[index].load(std::memory_order_acquire)) std::this_thread::yield();
  }
  /// A crew thread's part: takes and copies slices until every one is taken, spinning while the next is unpublished.
  void work() noexcept {
    for (;;) {
      std::size_t i = next_.load(std::memory_order_relaxed);
      if (i >= count_) return;
      if (i >= ready_.load(std::memory_order_acquire)) {
        std::this_thread::yield();
        continue;
      }
      if (!next_.compare_exchange_weak(i, i + 1, std::memory_order_acq_rel)) continue;
      const std::size_t offset = i * slice_;
      std::memcpy(to_ + offset, from_ + offset, std::min(slice_, bytes_ - offset));
      done_[i].store(true, std::memory_order_release);
    }
  }

 private:
  unsigned char* to_;
  const unsigned char* from_;
  std::size_t bytes_;
  std::size_t slice_;
  std::size_t count_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::atomic<std::size_t> ready_{0};
  std::atomic<std::size_t> next_{0};
};

/// Threads that run CopyJobs: the reference's counterpart of the delegate's HostCopyPool, without
/// locks on the way of a slice. Between jobs they spin for 2 ms (the phases of one call follow
/// each other closely), then sleep.
class CopyCrew {
 public:
  explicit CopyCrew(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~CopyCrew() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  CopyCrew(const CopyCrew&) = delete;  // owns threads
  CopyCrew& operator=(const CopyCrew&) = delete;

  /// Sets every thread on `job` (reset beforehand); returns at once.
  void post(CopyJob& job) {
    left_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }
  /// Waits until every thread has left the posted job: all its published slices are then copied.
  void wait() const noexcept {
    while (left_.load(std::memory_order_acquire) < static_cast<int>(threads_.size())) std::this_thread::yield();
  }

 private:
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      const auto give_up = Clock::now() + std::chrono::milliseconds(2);
      while (generation_.load(std::memory_order_acquire) == seen && Clock::now() < give_up) std::this_thread::yield();
      CopyJob* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_.load(std::memory_order_relaxed) != seen; });
        if (stopping_) return;
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
      }
      job->work();
      left_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  CopyJob* job_ = nullptr;  // guarded by mutex_
  bool stopping_ = false;   // guarded by mutex_
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> left_{0};
};

/// Pinned host memory of the kind the session stages in: from a host memory pool where the device
/// has them, else cudaHostAlloc.
class StagingMemory {
 public:
  StagingMemory(std::size_t bytes, cudaStream_t stream) {
    auto pool = ex::cuda::MemoryPool::pinned_host_memory(0);
    if (pool.ok()) {
      pool_ = std::move(pool).value();
      auto buffer = ex::cuda::DeviceBuffer::allocate_from(pool_.get(), bytes, stream);
      require(buffer.status(), "host pool allocation");
      pooled_ = std::move(buffer).value();
      require_cuda(cudaStreamSynchronize(stream), "sync");
    } else {
      require_cuda(cudaHostAlloc(&fallback_, bytes, cudaHostAllocPortable), "cudaHostAlloc (bench setup)");
    }
  }
  ~StagingMemory() {
    if (fallback_ != nullptr) cudaFreeHost(fallback_);
  }
  StagingMemory(const StagingMemory&) = delete;  // owns memory
  StagingMemory& operator=(const StagingMemory&) = delete;

  unsigned char* data() const noexcept { return static_cast<unsigned char*>(pooled_ ? pooled_.data() : fallback_); }
  bool pooled() const noexcept { return static_cast<bool>(pooled_); }

 private:
  ex::cuda::MemoryPool pool_;       // destroyed after pooled_ is freed
  ex::cuda::DeviceBuffer pooled_;
  void* fallback_ = nullptr;
};

/// One layout of the reference staging: how many threads copy, how many bytes each transfer moves,
/// how many bytes each thread copies at a time (a chunk shared by threads when slice < chunk). The
/// chunk is a multiple of the slice, so a chunk is whole slices.
struct Layout {
  int threads = 0;
  std::size_t chunk = 0;
  std::size_t slice = 0;
};

/// What this host allows pageable staging of one 64 MiB input and one 64 MiB output. GB/s throughout.
struct Limit {
  std::vector<std::pair<int, double>> copy_in;   ///< threads, pageable -> pinned
  std::vector<std::pair<int, double>> copy_out;  ///< threads, pinned -> pageable
  double h2d = 0, d2h = 0;                       ///< the session's kind of staging memory, one way alone
  double h2d_host_alloc = 0, d2h_host_alloc = 0;  ///< cudaHostAlloc memory (host_staging.pinned's), one way alone
  double both = 0;                               ///< H2D and D2H at once, both directions' bytes
  double h2d_beside_copy = 0, copy_beside_h2d = 0;  ///< H2D while the most threads copy in, and that copy
  double d2h_beside_copy = 0, copy_beside_d2h = 0;  ///< D2H while the most threads copy out, and that copy
  std::vector<std::pair<Layout, double>> staged;    ///< the reference call's rate, per layout
  std::pair<Layout, double> best;
  bool pooled = false;
};

/// The tensors of host_staging's call and the engine's kernel, shared by the delegate's and the
/// reference's runs.
struct Io {
  Buffer& pageable_in;
  Buffer& pageable_out;
  Buffer& pinned_in;
  Buffer& pinned_out;
  Buffer& device_in;
  Buffer& device_out;
  const SpinOptions& kernel;
  cudaStream_t stream;
  std::size_t bytes() const noexcept { return pageable_in.bytes(); }
};

/// Which of the call's host tensors are staged (the others stay in device memory).
enum class Staged { kBoth, kInOnly, kOutOnly };

/// Host times (us) of a reference call's phases: from its start to the first transfer queued, to
/// the input copied (the last transfer queued), and from there to its end.
struct Phases {
  std::vector<double> first, in, out;
  void note(Clock::time_point start, Clock::time_point first_queued, Clock::time_point in_done) {
    first.push_back(std::chrono::duration<double, std::micro>(first_queued - start).count());
    in.push_back(std::chrono::duration<double, std::micro>(in_done - start).count());
    out.push_back(micros_since(in_done));
  }
  std::string describe() const {
    auto mid = [](const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); };
    return format("first transfer %.0f, input %.0f, output %.0f us", mid(first), mid(in), mid(out));
  }
};

/// The reference call: host_staging's call with pageable I/O staged by raw CUDA and a CopyCrew. In:
/// the crew copies slices into pinned staging while this thread queues each chunk's transfer as
/// soon as its slices are copied. The kernel. Out: every chunk's transfer and an event queued, then
/// this thread publishes each chunk's slices to the crew as its event fires. Returns once the
/// output is copied.
class ReferenceCall {
 public:
  ReferenceCall(const Io& io, unsigned char* stage_in, unsigned char* stage_out, std::vector<cudaEvent_t>& events,
                CopyCrew& crew, const Layout& layout, Staged staged = Staged::kBoth)
      : io_(io), stage_in_(stage_in), stage_out_(stage_out), events_(events), crew_(crew), chunk_(layout.chunk),
        staged_(staged), in_(stage_in, io.pageable_in.data(), io.bytes(), layout.slice),
        out_(io.pageable_out.data(), stage_out, io.bytes(), layout.slice) {}

  void operator()() {
    const std::size_t bytes = io_.bytes();
    const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
    auto* device_in = reinterpret_cast<unsigned char*>(io_.device_in.data());
    auto* device_out = reinterpret_cast<unsigned char*>(io_.device_out.data());
    const auto start = Clock::now();
    if (staged_ != Staged::kOutOnly) copy_in(bytes, chunks, device_in);
    const auto in_done = Clock::now();
    require(launch_spin_scale(io_.device_in.data(), io_.device_out.data(),
                              static_cast<std::int64_t>(io_.device_in.count()), io_.kernel, io_.stream),
            "reference kernel");
    if (staged_ != Staged::kInOnly) {
      copy_out(bytes, chunks, device_out);
    } else {
      require_cuda(cudaStreamSynchronize(io_.stream), "reference sync");  // as a call with a device output
    }
    if (staged_ == Staged::kBoth) phases.note(start, first_queued_, in_done);
  }

  Phases phases;

 private:
  void copy_in(std::size_t bytes, std::size_t chunks, unsigned char* device_in) {
    in_.reset(in_.size());
    crew_.post(in_);
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * chunk_, length = std::min(chunk_, bytes - begin);
      for (std::size_t s = in_.slice_at(begin); s < in_.slice_at(begin + length); ++s) in_.wait(s);
      require_cuda(cudaMemcpyAsync(device_in + begin, stage_in_ + begin, length, cudaMemcpyHostToDevice, io_.stream),
                   "reference h2d");
      if (c == 0) first_queued_ = Clock::now();
    }
    crew_.wait();
  }

  void copy_out(std::size_t bytes, std::size_t chunks, unsigned char* device_out) {
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * chunk_, length = std::min(chunk_, bytes - begin);
      require_cuda(cudaMemcpyAsync(stage_out_ + begin, device_out + begin, length, cudaMemcpyDeviceToHost, io_.stream),
                   "reference d2h");
      require_cuda(cudaEventRecord(events_[c], io_.stream), "reference record");
    }
    out_.reset(0);
    crew_.post(out_);
    for (std::size_t c = 0; c < chunks; ++c) {
      require_cuda(cudaEventSynchronize(events_[c]), "reference chunk wait");
      out_.publish(out_.slice_at(std::min(bytes, (c + 1) * chunk_)));
    }
    crew_.wait();
  }

  const Io& io_;
  unsigned char* stage_in_;
  unsigned char* stage_out_;
  std::vector<cudaEvent_t>& events_;
  CopyCrew& crew_;
  std::size_t chunk_;
  Staged staged_;
  Clock::time_point first_queued_;
  CopyJob in_;
  CopyJob out_;
};

/// The reference call with the delegate's own host copy pool and layout in the crew's place
/// (HostCopyPool::shared(), chunk_bytes() and kCopySlice, as ChunkedCopy::send and
/// ChunkedCopy::finish_receives use them): what the session adds beyond its pool, and what the pool
/// costs against the crew.
class PoolReferenceCall {
 public:
  PoolReferenceCall(const Io& io, unsigned char* stage_in, unsigned char* stage_out, std::vector<cudaEvent_t>& events,
                    ex::staging::HostCopyPool& pool)
      : io_(io), stage_in_(stage_in), stage_out_(stage_out), events_(events), pool_(pool) {}

  void operator()() {
    namespace d = ex::staging;
    const std::size_t bytes = io_.bytes();
    const std::size_t chunk = d::chunk_bytes(bytes), slice = d::slice_bytes(chunk);
    auto* device_in = reinterpret_cast<unsigned char*>(io_.device_in.data());
    auto* device_out = reinterpret_cast<unsigned char*>(io_.device_out.data());
    const auto* from = reinterpret_cast<const unsigned char*>(io_.pageable_in.data());
    auto* to = reinterpret_cast<unsigned char*>(io_.pageable_out.data());
    d::HostCopyPool& pool = pool_;
    const auto start = Clock::now();
    Clock::time_point first_queued;
    tasks_.clear();
    for (std::size_t offset = 0; offset < bytes; offset += slice) {
      tasks_.push_back(d::CopyTask{stage_in_ + offset, from + offset, std::min(slice, bytes - offset)});
    }
    {
      d::CopyBatch batch(tasks_);
      pool.begin(batch, tasks_.size());
      const std::size_t per_chunk = chunk / slice;
      for (std::size_t first = 0; first < tasks_.size(); first += per_chunk) {
        const std::size_t end = std::min(first + per_chunk, tasks_.size());
        for (std::size_t t = first; t < end; ++t) pool.help_until_done(batch, t);
        const std::size_t offset = first * slice;
        require_cuda(cudaMemcpyAsync(device_in + offset, stage_in_ + offset, std::min(chunk, bytes - offset),
                                     cudaMemcpyHostToDevice, io_.stream),
                     "pool reference h2d");
        if (first == 0) first_queued = Clock::now();
      }
      pool.finish(batch);
    }
    const auto in_done = Clock::now();
    require(launch_spin_scale(io_.device_in.data(), io_.device_out.data(),
                              static_cast<std::int64_t>(io_.device_in.count()), io_.kernel, io_.stream),
            "pool reference kernel");
    tasks_.clear();
    ends_.clear();
    for (std::size_t offset = 0, c = 0; offset < bytes; offset += chunk, ++c) {
      const std::size_t length = std::min(chunk, bytes - offset);
      require_cuda(cudaMemcpyAsync(stage_out_ + offset, device_out + offset, length, cudaMemcpyDeviceToHost, io_.stream),
                   "pool reference d2h");
      require_cuda(cudaEventRecord(events_[c], io_.stream), "pool reference record");
      for (std::size_t part = 0; part < length; part += slice) {
        tasks_.push_back(d::CopyTask{to + offset + part, stage_out_ + offset + part, std::min(slice, length - part)});
      }
      ends_.push_back(tasks_.size());
    }
    d::CopyBatch batch(tasks_);
    pool.begin(batch, 0);
    for (std::size_t c = 0; c < ends_.size(); ++c) {
      require_cuda(cudaEventSynchronize(events_[c]), "pool reference chunk wait");
      pool.publish(batch, ends_[c]);
    }
    pool.finish(batch);
    phases.note(start, first_queued, in_done);
  }

  Phases phases;

 private:
  const Io& io_;
  unsigned char* stage_in_;
  unsigned char* stage_out_;
  std::vector<cudaEvent_t>& events_;
  ex::staging::HostCopyPool& pool_;
  std::vector<ex::staging::CopyTask> tasks_;
  std::vector<std::size_t> ends_;
};

/// Staging of the reference: pinned memory for both directions, one event per chunk of 1 MiB.
struct ReferenceStaging {
  ReferenceStaging(std::size_t bytes, cudaStream_t stream) : in(bytes, stream), out(bytes, stream) {
    events.resize((bytes + kMiB - 1) / kMiB);
    for (cudaEvent_t& event : events) require_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
  }
  ~ReferenceStaging() {
    for (cudaEvent_t event : events) cudaEventDestroy(event);
  }
  ReferenceStaging(const ReferenceStaging&) = delete;  // owns events
  ReferenceStaging& operator=(const ReferenceStaging&) = delete;

  StagingMemory in, out;
  std::vector<cudaEvent_t> events;
};

/// Median over `runs` of a transfer of `bytes` on `stream` (event time) while `threads` copy
/// `copy` on the host; the copy's own median host time goes to `copy_us`.
double transfer_beside_copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                            CopyCrew& crew, CopyJob& copy, double& copy_us) {
  cudaEvent_t start = nullptr, stop = nullptr;
  require_cuda(cudaEventCreate(&start), "event");
  require_cuda(cudaEventCreate(&stop), "event");
  std::vector<double> transfer, host;
  for (int i = 0; i < 12; ++i) {
    require_cuda(cudaEventRecord(start, stream), "record");
    require_cuda(cudaMemcpyAsync(to, from, bytes, kind, stream), "transfer");
    require_cuda(cudaEventRecord(stop, stream), "record");
    const auto begin = Clock::now();
    copy.reset(copy.size());
    crew.post(copy);
    crew.wait();
    const double copied = micros_since(begin);
    require_cuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    require_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    if (i >= 2) {
      transfer.push_back(1000.0 * ms);
      host.push_back(copied);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  copy_us = median(host);
  return median(transfer);
}

Limit measure_limit(const Io& io, ReferenceStaging& staging) {
  const std::size_t bytes = io.bytes();
  const double b = static_cast<double>(bytes);
  Limit limit;
  limit.pooled = staging.in.pooled();
  // The host side alone: memcpy of 64 MiB in 1 MiB pieces (as the delegate's pool) by 1-15 threads.
  for (int threads : thread_counts({1, 2, 4, 8, 15})) {
    CopyCrew crew(threads);
    CopyJob in(staging.in.data(), io.pageable_in.data(), bytes, kMiB);
    CopyJob out(io.pageable_out.data(), staging.out.data(), bytes, kMiB);
    auto run = [&](CopyJob& job) {
      return median_us([&] {
        job.reset(job.size());
        crew.post(job);
        crew.wait();
      });
    };
    limit.copy_in.emplace_back(threads, gb_per_s(b, run(in)));
    limit.copy_out.emplace_back(threads, gb_per_s(b, run(out)));
  }
  // The link alone: one way, then both at once on two streams.
  auto transfer = [&](void* to, const void* from, cudaMemcpyKind kind) {
    return gb_per_s(b, median_us([&] {
                      require_cuda(cudaMemcpyAsync(to, from, bytes, kind, io.stream), "transfer");
                      require_cuda(cudaStreamSynchronize(io.stream), "sync");
                    }));
  };
  limit.h2d = transfer(io.device_in.data(), staging.in.data(), cudaMemcpyHostToDevice);
  limit.d2h = transfer(staging.out.data(), io.device_out.data(), cudaMemcpyDeviceToHost);
  limit.h2d_host_alloc = transfer(io.device_in.data(), io.pinned_in.data(), cudaMemcpyHostToDevice);
  limit.d2h_host_alloc = transfer(io.pinned_out.data(), io.device_out.data(), cudaMemcpyDeviceToHost);
  cudaStream_t other = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "stream");
  limit.both = gb_per_s(2 * b, median_us([&] {
                          require_cuda(cudaMemcpyAsync(io.device_in.data(), staging.in.data(), bytes,
                                                       cudaMemcpyHostToDevice, io.stream),
                                       "h2d");
                          require_cuda(cudaMemcpyAsync(staging.out.data(), io.device_out.data(), bytes,
                                                       cudaMemcpyDeviceToHost, other),
                                       "d2h");
                          require_cuda(cudaStreamSynchronize(io.stream), "sync");
                          require_cuda(cudaStreamSynchronize(other), "sync");
                        }));
  require_cuda(cudaStreamDestroy(other), "destroy");
  // Host copy and transfer at once, on different memory: what each gets when they share the host.
  {
    const int most = thread_counts({15}).front();
    CopyCrew crew(most);
    CopyJob in(io.pinned_in.data(), io.pageable_in.data(), bytes, kMiB);
    CopyJob out(io.pageable_out.data(), io.pinned_out.data(), bytes, kMiB);
    double copy_us = 0;
    limit.h2d_beside_copy = gb_per_s(b, transfer_beside_copy(io.device_in.data(), staging.in.data(), bytes,
                                                             cudaMemcpyHostToDevice, io.stream, crew, in, copy_us));
    limit.copy_beside_h2d = gb_per_s(b, copy_us);
    limit.d2h_beside_copy = gb_per_s(b, transfer_beside_copy(staging.out.data(), io.device_out.data(), bytes,
                                                             cudaMemcpyDeviceToHost, io.stream, crew, out, copy_us));
    limit.copy_beside_d2h = gb_per_s(b, copy_us);
  }
  // The reference call over layouts: threads x transfer chunk x (one thread per chunk, or threads
  // sharing a chunk in 128 KiB slices).
  for (int threads : thread_counts({4, 8, 15})) {
    CopyCrew crew(threads);
    for (std::size_t chunk : {1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB}) {
      for (std::size_t slice : {chunk, kMiB / 8}) {
        const Layout layout{threads, chunk, slice};
        ReferenceCall call(io, staging.in.data(), staging.out.data(), staging.events, crew, layout);
        const double rate = gb_per_s(2 * b, median_us(call));
        limit.staged.emplace_back(layout, rate);
        if (rate > limit.best.second) limit.best = {layout, rate};
      }
    }
  }
  return limit;
}

std::string layout_name(const Layout& layout) {
  return format("%d threads, %zu MiB chunks, %s", layout.threads, layout.chunk / kMiB,
                layout.slice == layout.chunk ? "a thread per chunk" : format("%zu KiB slices", layout.slice >> 10).c_str());
}

void print_limit(const Limit& limit) {
  std::string in, out;
  for (const auto& [threads, rate] : limit.copy_in) in += format(" %d: %.1f", threads, rate);
  for (const auto& [threads, rate] : limit.copy_out) out += format(" %d: %.1f", threads, rate);
  std::printf("host_staging host copy, 64 MiB in 1 MiB pieces, GB/s by threads: pageable->pinned%s; pinned->pageable%s\n",
              in.c_str(), out.c_str());
  std::printf("host_staging transfers, 64 MiB: H2D %.1f, D2H %.1f GB/s (staging from %s); cudaHostAlloc: H2D %.1f, D2H %.1f; "
              "H2D and D2H at once %.1f GB/s together\n",
              limit.h2d, limit.d2h, limit.pooled ? "a host memory pool, as the session's" : "cudaHostAlloc",
              limit.h2d_host_alloc, limit.d2h_host_alloc, limit.both);
  const int most = limit.copy_in.back().first;
  std::printf("host_staging sharing the host, %d threads copying 64 MiB during a 64 MiB transfer: H2D %.1f GB/s with copy in "
              "%.1f; D2H %.1f GB/s with copy out %.1f\n",
              most, limit.h2d_beside_copy, limit.copy_beside_h2d, limit.d2h_beside_copy, limit.copy_beside_d2h);
  std::printf("host_staging reference staging (raw CUDA + host threads, no delegate), GB/s of in + out:\n");
  std::printf("    %-34s %8s %8s %8s %8s\n", "threads, copy unit", "1 MiB", "2 MiB", "4 MiB", "8 MiB");
  for (std::size_t i = 0; i < limit.staged.size(); i += 8) {
    for (int shared = 0; shared < 2; ++shared) {
      std::string line = format("    %2d threads, %-22s", limit.staged[i].first.threads,
                                shared == 0 ? "a thread per chunk" : "128 KiB slices");
      for (std::size_t c = 0; c < 4; ++c) line += format(" %8.1f", limit.staged[i + 2 * c + shared].second);
      std::printf("%s\n", line.c_str());
    }
  }
}

}  // namespace

void host_staging(const Config& config, std::vector<Row>& rows) {
  const std::size_t n = (64u << 20) / sizeof(float);
  const SpinOptions options{264, 256, 0, 0, 1, static_cast<std::int64_t>(n)};
  auto session = spin_session(options);
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  Buffer device_in(Memory::kDevice, n), device_out(Memory::kDevice, n);
  Buffer pinned_in(Memory::kPinned, n), pinned_out(Memory::kPinned, n);
  Buffer pageable_in(Memory::kPageable, n), pageable_out(Memory::kPageable, n);
  const Io io{pageable_in, pageable_out, pinned_in, pinned_out, device_in, device_out, options, stream};
  const double bytes = 2.0 * static_cast<double>(n * sizeof(float));
  auto check = [&](Buffer& in, Buffer& out, auto&& call) {
    std::fill(out.data(), out.data() + n, -1.0f);  // poison, then one more call, checked
    call();
    for (std::size_t i = 0; i < n; i += 4093) {
      if (out.data()[i] != 2.0f * in.data()[i]) {
        std::fprintf(stderr, "host_staging: wrong output at %zu\n", i);
        std::exit(4);
      }
    }
  };
  auto copy_time = [&](Buffer& in, Buffer& out) {
    return median_us([&] {
      require_cuda(cudaMemcpyAsync(device_in.data(), in.data(), in.bytes(), cudaMemcpyHostToDevice, stream), "h2d");
      require_cuda(cudaMemcpyAsync(out.data(), device_out.data(), out.bytes(), cudaMemcpyDeviceToHost, stream), "d2h");
      require_cuda(cudaStreamSynchronize(stream), "sync");
    });
  };
  auto execute = [&](Buffer& in, Buffer& out) {
    return [&session, &in, &out, n, stream] {
      TensorView args[2] = {in.view(n), out.view(n)};
      ex::CudaStreamGuard guard(stream);
      require(session->execute(args, 2), "execute");
    };
  };
  auto execute_time = [&](Buffer& in, Buffer& out) {
    const double us = median_us(execute(in, out));
    check(in, out, execute(in, out));
    return us;
  };
  const double pinned_copy = copy_time(pinned_in, pinned_out);
  const double pageable_copy = copy_time(pageable_in, pageable_out);
  const double pinned_exec = execute_time(pinned_in, pinned_out);
  const double pageable_exec = execute_time(pageable_in, pageable_out);
  std::printf("host_staging: 64 MiB in + 64 MiB out: pinned cudaMemcpy %.1f GB/s, pageable cudaMemcpy %.1f GB/s, "
              "execute with pinned I/O %.1f GB/s, with pageable I/O %.1f GB/s\n",
              gb_per_s(bytes, pinned_copy), gb_per_s(bytes, pageable_copy), gb_per_s(bytes, pinned_exec),
              gb_per_s(bytes, pageable_exec));

  // The limit of pageable staging on this host, then the delegate against its best layout in
  // alternating rounds (so neither the sweep's pick of its best nor drift favours the reference).
  std::vector<double> delegate_us, reference_us;
  Limit limit;
  {
    ReferenceStaging staging(n * sizeof(float), stream);
    limit = measure_limit(io, staging);
    print_limit(limit);
    CopyCrew crew(limit.best.first.threads);
    ReferenceCall reference(io, staging.in.data(), staging.out.data(), staging.events, crew, limit.best.first);
    check(pageable_in, pageable_out, reference);
    for (int round = 0; round < 3; ++round) {
      time_calls(10, execute(pageable_in, pageable_out), delegate_us);
      time_calls(10, reference, reference_us);
    }
  }
  const double staged_delegate = gb_per_s(bytes, median(delegate_us));
  const double staged_best = gb_per_s(bytes, median(reference_us));
  // The host copy at its best thread count, each way; with the link's rates, the parts' bound (as if
  // host copy and transfer did not share the host).
  double copy_in_best = 0, copy_out_best = 0;
  for (const auto& part : limit.copy_in) copy_in_best = std::max(copy_in_best, part.second);
  for (const auto& part : limit.copy_out) copy_out_best = std::max(copy_out_best, part.second);
  const double bound_us =
      bytes / 2 / std::min(limit.h2d, copy_in_best) / 1e3 + bytes / 2 / std::min(limit.d2h, copy_out_best) / 1e3;
  // Where a miss comes from, for the next look: each direction alone through the delegate (the
  // other side device memory), against what the parts allow one way (host copy and link, each at
  // its best alone), and the rounds' own medians (their spread is the run's noise).
  const double one_way_bytes = bytes / 2;
  const double in_alone = gb_per_s(one_way_bytes, median_us(execute(pageable_in, device_out)));
  const double out_alone = gb_per_s(one_way_bytes, median_us(execute(device_in, pageable_out)));
  // The same split for the reference at its best layout, and the reference with the delegate's
  // pool and layout in the crew's place (both directions), measured here after the rounds.
  double ref_in = 0, ref_out = 0, pool_both = 0;
  std::vector<std::pair<int, double>> pool_sizes;  // workers of a pool of the bench's own, rate
  auto& shared_pool = ex::staging::HostCopyPool::shared();
  {
    ReferenceStaging staging(n * sizeof(float), stream);
    CopyCrew crew(limit.best.first.threads);
    ReferenceCall in_only(io, staging.in.data(), staging.out.data(), staging.events, crew, limit.best.first,
                          Staged::kInOnly);
    ReferenceCall out_only(io, staging.in.data(), staging.out.data(), staging.events, crew, limit.best.first,
                           Staged::kOutOnly);
    ref_in = gb_per_s(one_way_bytes, median_us(in_only));
    ref_out = gb_per_s(one_way_bytes, median_us(out_only));
    ReferenceCall both(io, staging.in.data(), staging.out.data(), staging.events, crew, limit.best.first);
    (void)median_us(both);
    PoolReferenceCall pooled(io, staging.in.data(), staging.out.data(), staging.events, shared_pool);
    check(pageable_in, pageable_out, pooled);
    pool_both = gb_per_s(bytes, median_us(pooled));
    std::printf("host_staging.pageable phases (host, medians): the reference at its best layout: %s; the reference with the delegate's "
                "pool: %s\n",
                both.phases.describe().c_str(), pooled.phases.describe().c_str());
    // The host copy alone, 64 MiB pageable -> pinned in 128 KiB slices: a crew of the pool's size
    // for such a copy (its workers and wide workers: Note [wide batches]) and the caller waiting,
    // against the pool's threads and the caller (begin, then finish).
    {
      const int workers = shared_pool.workers() + shared_pool.wide_workers();
      CopyCrew same(std::max(1, workers));
      CopyJob job(staging.in.data(), io.pageable_in.data(), bytes / 2, kMiB / 8);
      const double crew_rate = gb_per_s(bytes / 2, median_us([&] {
                                          job.reset(job.size());
                                          same.post(job);
                                          same.wait();
                                        }));
      std::vector<ex::staging::CopyTask> tasks;
      for (std::size_t offset = 0; offset < n * sizeof(float); offset += kMiB / 8) {
        tasks.push_back({staging.in.data() + offset, reinterpret_cast<const unsigned char*>(io.pageable_in.data()) + offset,
                         kMiB / 8});
      }
      const double pool_rate = gb_per_s(bytes / 2, median_us([&] {
                                          ex::staging::CopyBatch batch(tasks);
                                          shared_pool.begin(batch, tasks.size());
                                          shared_pool.finish(batch);
                                        }));
      std::printf("host_staging.pageable host copy alone, 64 MiB in 128 KiB slices: a crew of %d threads %.1f GB/s, the pool's %d "
                  "workers for it and the caller %.1f GB/s\n",
                  std::max(1, workers), crew_rate, workers, pool_rate);
    }
    for (int workers : thread_counts({3, 7, 11, 15})) {
      ex::staging::HostCopyPool own(workers);
      PoolReferenceCall call(io, staging.in.data(), staging.out.data(), staging.events, own);
      pool_sizes.emplace_back(workers, gb_per_s(bytes, median_us(call)));
    }
  }
  std::string sizes;
  for (const auto& [workers, rate] : pool_sizes) sizes += format(" %d workers: %.1f;", workers, rate);
  std::printf("host_staging.pageable the reference one way (its best layout): in %.1f GB/s, out %.1f GB/s; the reference with the "
              "delegate's copy pool and layout (%zu MiB chunks, %zu KiB slices, %d workers, %d wide workers and the caller): %.1f GB/s; "
              "with a pool of%s; the wide workers copied %llu tasks in this process\n",
              ref_in, ref_out, ex::staging::chunk_bytes(n * sizeof(float)) / kMiB, ex::staging::kCopySlice >> 10,
              shared_pool.workers(), shared_pool.wide_workers(), pool_both, sizes.c_str(),
              static_cast<unsigned long long>(shared_pool.wide_worker_tasks()));
  auto round_rates = [&](const std::vector<double>& samples) {
    std::string rates;
    for (std::size_t first = 0; first + 10 <= samples.size(); first += 10) {
      const std::vector<double> round(samples.begin() + static_cast<std::ptrdiff_t>(first),
                                      samples.begin() + static_cast<std::ptrdiff_t>(first + 10));
      rates += format("%s%.1f", rates.empty() ? "" : " ", gb_per_s(bytes, median(round)));
    }
    return rates;
  };
  std::printf("host_staging.pageable one way through the delegate: pageable in (device out) %.1f GB/s, pageable out (device in) %.1f "
              "GB/s; the parts allow in %.1f, out %.1f GB/s; rounds (GB/s): delegate %s, reference %s\n",
              in_alone, out_alone, std::min(limit.h2d, copy_in_best), std::min(limit.d2h, copy_out_best),
              round_rates(delegate_us).c_str(), round_rates(reference_us).c_str());

  const double ratio = staged_delegate / staged_best;
  const double pinned_ratio = pinned_copy / pinned_exec;
  const double pageable_vs_pinned = pinned_copy / pageable_exec;
  std::printf("host_staging.pageable: execute with pageable I/O %.1f GB/s, the reference's best layout (%s) %.1f GB/s: %.3f "
              "(3 alternating rounds of 10 calls each); the parts alone would allow %.1f GB/s, pinned cudaMemcpy %.1f "
              "GB/s (execute vs pinned cudaMemcpy %.3f)\n",
              staged_delegate, layout_name(limit.best.first).c_str(), staged_best, ratio, gb_per_s(bytes, bound_us),
              gb_per_s(bytes, pinned_copy), pageable_vs_pinned);

  std::vector<std::string> csv = {
      format("pinned_memcpy,%.1f,%.2f", pinned_copy, gb_per_s(bytes, pinned_copy)),
      format("pageable_memcpy,%.1f,%.2f", pageable_copy, gb_per_s(bytes, pageable_copy)),
      format("execute_pinned,%.1f,%.2f", pinned_exec, gb_per_s(bytes, pinned_exec)),
      format("execute_pageable,%.1f,%.2f", pageable_exec, gb_per_s(bytes, pageable_exec))};
  const double one_way = bytes / 2;
  auto row = [&](const std::string& path, double bytes_moved, double gbps) {
    csv.push_back(format("%s,%.1f,%.2f", path.c_str(), bytes_moved / gbps / 1e3, gbps));
  };
  for (const auto& [threads, rate] : limit.copy_in) row(format("host_copy_in_%dt", threads), one_way, rate);
  for (const auto& [threads, rate] : limit.copy_out) row(format("host_copy_out_%dt", threads), one_way, rate);
  row("h2d_staging", one_way, limit.h2d);
  row("d2h_staging", one_way, limit.d2h);
  row("h2d_host_alloc", one_way, limit.h2d_host_alloc);
  row("d2h_host_alloc", one_way, limit.d2h_host_alloc);
  row("h2d_d2h_at_once", bytes, limit.both);
  row("h2d_beside_copy_in", one_way, limit.h2d_beside_copy);
  row("copy_in_beside_h2d", one_way, limit.copy_beside_h2d);
  row("d2h_beside_copy_out", one_way, limit.d2h_beside_copy);
  row("copy_out_beside_d2h", one_way, limit.copy_beside_d2h);
  for (const auto& [layout, rate] : limit.staged) {
    row(format("reference_%dt_%zuMiB_%zuKiB", layout.threads, layout.chunk / kMiB, layout.slice >> 10), bytes, rate);
  }
  row("reference_best_alternating", bytes, staged_best);
  row("execute_pageable_alternating", bytes, staged_delegate);
  row("execute_pageable_in_only", one_way_bytes, in_alone);
  row("execute_pageable_out_only", one_way_bytes, out_alone);
  row("reference_in_only", one_way_bytes, ref_in);
  row("reference_out_only", one_way_bytes, ref_out);
  row("reference_with_delegate_pool", bytes, pool_both);
  for (const auto& [workers, rate] : pool_sizes) row(format("reference_with_pool_of_%d", workers), bytes, rate);
  row("bound_from_parts", bytes, gb_per_s(bytes, bound_us));
  append_csv(config.out_dir + "/host_staging.csv", "path,us,GBps", csv);

  rows.push_back({"host_staging.pinned", "64 MiB in + out, pinned host I/O: execute vs pinned cudaMemcpy",
                  format("%.1f GB/s", gb_per_s(bytes, pinned_exec)), format("%.1f GB/s", gb_per_s(bytes, pinned_copy)),
                  pinned_ratio, ">= 0.90", pinned_ratio >= 0.90});
  rows.push_back({"host_staging.pageable", "64 MiB in + out, pageable host I/O: execute vs the host's staging limit",
                  format("%.1f GB/s", staged_delegate), format("%.1f GB/s (parts: %.1f)", staged_best, gb_per_s(bytes, bound_us)),
                  ratio, ">= 0.90", ratio >= 0.90});
  rows.push_back({"host_staging.pageable_vs_pinned", "64 MiB in + out, pageable host I/O (staged) vs pinned cudaMemcpy",
                  format("%.1f GB/s", gb_per_s(bytes, pageable_exec)),
                  format("%.1f GB/s (pageable memcpy %.1f)", gb_per_s(bytes, pinned_copy), gb_per_s(bytes, pageable_copy)),
                  pageable_vs_pinned, "(continuity)", true});
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

}  // namespace trtet_bench
