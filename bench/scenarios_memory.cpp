// The memory scenarios: first_calls, the first calls of a session whose staging was made at
// initialize within a budget, against its steady calls; session_memory, the device and host bytes a
// session adds beyond its engine, from its staging statistics, and cudaMemGetInfo before create
// against after destroy.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "session/session.h"
#include "scenarios.h"

namespace trtet_bench {
namespace {

using ex::delegate::Session;
using ex::delegate::SessionStats;
using ex::delegate::TensorView;

constexpr std::size_t kMiB = std::size_t{1} << 20;

const char* name_of(Memory memory) {
  switch (memory) {
    case Memory::kDevice: return "device";
    case Memory::kPinned: return "pinned";
    case Memory::kPageable: return "pageable";
  }
  return "?";
}

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); }

/// Exits when out != 2 * in over the first `n` elements (sampled).
void check_doubled(const Buffer& in, const Buffer& out, std::size_t n, const char* what) {
  if (out.data() == nullptr || in.data() == nullptr) return;
  for (std::size_t i = 0; i < n; i += 4093) {
    if (out.data()[i] != 2.0f * in.data()[i]) {
      std::fprintf(stderr, "%s: wrong output at %zu\n", what, i);
      std::exit(4);
    }
  }
}

/// Reads a device output back to the host for check_doubled (device I/O only).
void check_doubled_on_device(const Buffer& in, const Buffer& out, std::size_t n, const char* what) {
  std::vector<float> host_in(n), host_out(n);
  require_cuda(cudaMemcpy(host_in.data(), in.data(), n * sizeof(float), cudaMemcpyDeviceToHost), "read in");
  require_cuda(cudaMemcpy(host_out.data(), out.data(), n * sizeof(float), cudaMemcpyDeviceToHost), "read out");
  for (std::size_t i = 0; i < n; i += 4093) {
    if (host_out[i] != 2.0f * host_in[i]) {
      std::fprintf(stderr, "%s: wrong output at %zu\n", what, i);
      std::exit(4);
    }
  }
}

// ---- first_calls --------------------------------------------------------------------------------
// A fresh session's first 20 calls with host input and output of 4 MiB each (pageable: 4 chunks
// of staging each way), each timed on the host (the call returns once its host output is
// written), then 2000 steady calls. With a staging budget, initialize made the staging and the
// first calls should cost what steady ones do; without one (the contrast), the first call grows
// device staging and page-locks new host staging.
struct FirstCalls {
  Percentiles first;
  Percentiles steady;
  std::uint64_t grows_in_first = 0;
  double initialize_us = 0;
  std::vector<double> leading;  ///< the first calls' own times (us), in order: where the p99 comes from
};

void first_calls_rows(const Config& config, std::vector<Row>& rows) {
  const std::size_t n = (4 * kMiB) / sizeof(float);
  const SpinOptions options{264, 256, 0, 0, 1, static_cast<std::int64_t>(n)};
  const std::size_t budget = 2 * 2 * n * sizeof(float);  // x and out, device and pinned host staging
  constexpr int kFirst = 20;
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  // Made (and filled: every page touched) before anything is timed.
  Buffer pageable_in(Memory::kPageable, n), pageable_out(Memory::kPageable, n);
  Buffer pinned_in(Memory::kPinned, n), pinned_out(Memory::kPinned, n);
  auto buffers = [&](Memory memory) {
    return memory == Memory::kPageable ? std::make_pair(&pageable_in, &pageable_out)
                                       : std::make_pair(&pinned_in, &pinned_out);
  };
  auto call = [&](Session& session, TensorView* args) {
    ex::CudaStreamGuard guard(stream);
    require(session.execute(args, 2), "first_calls execute");
  };
  // The process's one-time work (the kernel's module, the host copy workers, the driver's first
  // pools) in a throwaway session, so that the fresh sessions below pay only for their own.
  {
    auto warm = spin_session(options);
    for (Memory memory : {Memory::kPageable, Memory::kPinned}) {
      auto [in, out] = buffers(memory);
      TensorView args[2] = {in->view(n), out->view(n)};
      for (int i = 0; i < 10; ++i) call(*warm, args);
    }
  }
  auto measure = [&](Memory memory, std::size_t staging_budget) {
    auto [in, out] = buffers(memory);
    ex::delegate::SessionOptions session_options;
    session_options.staging_budget_bytes = staging_budget;
    FirstCalls result;
    const auto made = Clock::now();
    auto session = spin_session(options, session_options);
    result.initialize_us = micros_since(made);
    TensorView args[2] = {in->view(n), out->view(n)};
    std::vector<double> first, steady;
    for (int i = 0; i < kFirst; ++i) {
      const auto start = Clock::now();
      call(*session, args);
      first.push_back(micros_since(start));
    }
    result.grows_in_first = session->stats().staging_grows;
    result.leading.assign(first.begin(), first.begin() + std::min<std::size_t>(first.size(), 4));
    for (int i = 0; i < config.calls; ++i) {
      const auto start = Clock::now();
      call(*session, args);
      steady.push_back(micros_since(start));
    }
    std::fill(out->data(), out->data() + n, -1.0f);  // poison, then one more call, checked
    call(*session, args);
    check_doubled(*in, *out, n, "first_calls");
    result.first = percentiles(first);
    result.steady = percentiles(steady);
    return result;
  };
  std::vector<std::string> csv;
  const char* ids[2][2] = {{"first_calls.pageable_budget", "first_calls.pinned_budget"}, {"first_calls.pageable_no_budget", "first_calls.pinned_no_budget"}};
  for (int with_budget = 1; with_budget >= 0; --with_budget) {
    for (Memory memory : {Memory::kPageable, Memory::kPinned}) {
      const std::size_t staging_budget = with_budget ? budget : 0;
      const FirstCalls r = measure(memory, staging_budget);
      const double ratio = r.first.p99 / r.steady.p99;
      std::printf("first_calls %s I/O, 4 MiB in + 4 MiB out, budget %.0f MiB: initialize %.1f us; first %d calls p50 %.1f / "
                  "p99 %.1f us (%llu staging grows); %d steady calls p50 %.1f / p99 %.1f us; ratio %.3f\n",
                  name_of(memory), mib(staging_budget), r.initialize_us, kFirst, r.first.p50, r.first.p99,
                  static_cast<unsigned long long>(r.grows_in_first), config.calls, r.steady.p50, r.steady.p99, ratio);
      std::string leading;
      for (const double us : r.leading) leading += format(" %.1f", us);
      std::printf("    the first calls one by one (us):%s\n", leading.c_str());
      csv.push_back(format("%s,%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%llu", name_of(memory), staging_budget, r.initialize_us,
                           r.first.p50, r.first.p99, r.steady.p50, r.steady.p99,
                           static_cast<unsigned long long>(r.grows_in_first)));
      const char* id = ids[with_budget ? 0 : 1][memory == Memory::kPageable ? 0 : 1];
      if (with_budget) {
        rows.push_back({id, format("first 20 calls p99 / steady p99, 4 MiB %s I/O, staging budget", name_of(memory)),
                        format("%.1f us", r.first.p99), format("%.1f us (%llu grows)", r.steady.p99,
                                                               static_cast<unsigned long long>(r.grows_in_first)),
                        ratio, "<= 1.5", ratio <= 1.5});
      } else {
        rows.push_back({id, format("first 20 calls p99 / steady p99, 4 MiB %s I/O, no budget", name_of(memory)),
                        format("%.1f us", r.first.p99), format("%.1f us (%llu grows)", r.steady.p99,
                                                               static_cast<unsigned long long>(r.grows_in_first)),
                        ratio, "(contrast)", true});
      }
    }
  }
  append_csv(config.out_dir + "/first_calls.csv",
             "io,budget_bytes,initialize_us,first20_p50_us,first20_p99_us,steady_p50_us,steady_p99_us,grows_in_first20",
             csv);
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

// ---- session_memory -----------------------------------------------------------------------------
// What one session adds beyond its engine, from its own pools (SessionStats, read at stats()):
// 50 calls cycling 4 MiB, 1.3 MiB and 2 MiB tensors (the largest first), in and out, for device,
// pinned and pageable host I/O, no budget. Goals: device I/O adds nothing (reserved or used); host
// I/O holds at most the largest call's bytes (4 MiB in + 4 MiB out) in each pool at its peak (used
// high mark; the pools' reservations, in their own units, are printed beside). Then cudaMemGetInfo before the
// first session against after the last is destroyed: back to the baseline.

/// Free device memory once the device is idle and its default pool trimmed (the engine allocates
/// from it; the pool keeps freed memory until a synchronization trims it).
long long settled_free_memory() {
  require_cuda(cudaDeviceSynchronize(), "session_memory synchronize");
  cudaMemPool_t pool = nullptr;
  require_cuda(cudaDeviceGetDefaultMemPool(&pool, 0), "session_memory default pool");
  require_cuda(cudaMemPoolTrimTo(pool, 0), "session_memory trim");
  std::size_t free = 0, total = 0;
  require_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return static_cast<long long>(free);
}

void session_memory_rows(const Config& config, std::vector<Row>& rows) {
  const std::size_t n = (4 * kMiB) / sizeof(float);
  const SpinOptions options{264, 256, 0, 0, 1, static_cast<std::int64_t>(n)};
  const std::uint64_t largest_call = 2 * n * sizeof(float);
  const std::size_t sizes[] = {n, n / 3, n / 2};
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  Buffer device_in(Memory::kDevice, n), device_out(Memory::kDevice, n);
  Buffer pinned_in(Memory::kPinned, n), pinned_out(Memory::kPinned, n);
  Buffer pageable_in(Memory::kPageable, n), pageable_out(Memory::kPageable, n);
  auto buffers = [&](Memory memory) {
    switch (memory) {
      case Memory::kDevice: return std::make_pair(&device_in, &device_out);
      case Memory::kPinned: return std::make_pair(&pinned_in, &pinned_out);
      case Memory::kPageable: break;
    }
    return std::make_pair(&pageable_in, &pageable_out);
  };
  auto lifetime = [&](Memory memory) {
    auto [in, out] = buffers(memory);
    auto session = spin_session(options);
    for (int i = 0; i < 50; ++i) {
      const std::size_t elements = sizes[i % 3];
      TensorView args[2] = {in->view(elements), out->view(elements)};
      ex::CudaStreamGuard guard(stream);
      require(session->execute(args, 2), "session_memory execute");
    }
    require_cuda(cudaStreamSynchronize(stream), "session_memory sync");
    const std::size_t last = sizes[49 % 3];
    if (memory == Memory::kDevice) {
      check_doubled_on_device(*in, *out, last, "session_memory");
    } else {
      check_doubled(*in, *out, last, "session_memory");
    }
    const SessionStats stats = session->stats();
    session->destroy();
    return stats;
  };
  for (Memory memory : {Memory::kDevice, Memory::kPinned, Memory::kPageable}) (void)lifetime(memory);  // one-time work
  const long long baseline = settled_free_memory();

  std::vector<std::string> csv;
  const char* ids[] = {"session_memory.device_io", "session_memory.pinned_io", "session_memory.pageable_io"};
  int index = 0;
  for (Memory memory : {Memory::kDevice, Memory::kPinned, Memory::kPageable}) {
    const SessionStats s = lifetime(memory);
    std::printf("session_memory %s I/O (bytes): %s; largest call %llu\n", name_of(memory),
                ex::delegate::describe_memory(s).c_str(), static_cast<unsigned long long>(largest_call));
    const std::uint64_t fields[] = {s.device_reserved_bytes, s.device_used_bytes, s.device_reserved_high_bytes,
                                    s.device_used_high_bytes,  s.host_reserved_bytes, s.host_used_bytes,
                                    s.host_reserved_high_bytes, s.host_used_high_bytes, largest_call};
    std::string line = name_of(memory);
    for (const std::uint64_t field : fields) line += format(",%llu", static_cast<unsigned long long>(field));
    csv.push_back(line);
    const std::string measured = format("dev %.2f (%.2f) host %.2f (%.2f) MiB", mib(s.device_reserved_bytes),
                                        mib(s.device_used_bytes), mib(s.host_reserved_bytes), mib(s.host_used_bytes));
    if (memory == Memory::kDevice) {
      const std::uint64_t added = s.device_reserved_high_bytes + s.host_reserved_high_bytes;
      rows.push_back({ids[index], "bytes a session adds, reserved (used), device I/O", measured, "0 B",
                      static_cast<double>(added), "0 B", added == 0});
    } else {
      // The goal is on the staging the session holds at its peak (used, high mark). What the pools
      // reserve for it is shown beside: a pool maps memory in units of its own (32 MiB on the
      // H200), which a session with little staging does not fill.
      const std::uint64_t worst = std::max(s.device_used_high_bytes, s.host_used_high_bytes);
      const double ratio = static_cast<double>(worst) / static_cast<double>(largest_call);
      rows.push_back({ids[index], format("bytes a session adds, reserved (used), %s host I/O: peak used / largest call", name_of(memory)),
                      measured, format("%.2f MiB per pool", mib(largest_call)), ratio, "<= 1.00", ratio <= 1.0});
    }
    ++index;
  }
  // A destroyed pool is released once its last stream-ordered free has run, on the driver's
  // schedule: look again for up to 2 s before reading a shortfall.
  long long missing = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    missing = baseline - settled_free_memory();
    if (missing <= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("session_memory cudaMemGetInfo: free %lld B before the sessions, %lld B fewer after they were destroyed\n", baseline,
              missing);
  csv.push_back(format("memgetinfo_missing_after_destroy,%lld,,,,,,,,", missing));
  append_csv(config.out_dir + "/session_memory.csv",
             "io,device_reserved,device_used,device_reserved_high,device_used_high,host_reserved,host_used,"
             "host_reserved_high,host_used_high,largest_call_bytes",
             csv);
  // cudaMemGetInfo counts 2 MiB pages: a shortfall under one page is the driver's, not staging.
  const long long page = 2 * static_cast<long long>(kMiB);
  rows.push_back({"session_memory.after_destroy", "cudaMemGetInfo after destroy vs before create: bytes missing", format("%lld B", missing),
                  format("free %.0f MiB before", static_cast<double>(baseline) / static_cast<double>(kMiB)),
                  static_cast<double>(missing), "0 (< 2 MiB)", missing < page});
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

}  // namespace

void first_calls(const Config& config, std::vector<Row>& rows) { first_calls_rows(config, rows); }

void session_memory(const Config& config, std::vector<Row>& rows) { session_memory_rows(config, rows); }

}  // namespace trtet_bench
