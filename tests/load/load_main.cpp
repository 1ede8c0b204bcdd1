// The long load test (docs/TESTING.md, "Load"): several models, each a session over a test engine,
// on several green-context partitions of device 0, called from several threads at once for a
// given time, with the device's and the process's memory sampled every second.
//
//   trtet_load [--seconds S | --minutes M] [--warmup-seconds W] [--threads T] [--partitions P]
//              [--csv FILE] [--seed N]
//
// Thread t calls on a stream of partition t % P. Threads 0..P-1 each drive a model of their own
// whose kernels record the SMs they ran on (checked against the partition's probed SMs); the others
// share two models, each called from two partitions at once. Every call's arguments are drawn as
// the contract fuzzer draws them (device, pinned, pageable and managed memory, shapes within the
// profile, a guard or none, stale output shapes, null empty tensors, caller work queued before the
// call) and checked as it checks them, at the moment the execute contract says each result is
// ready (contract_fuzz/oracle.h); a guarded call with device-only I/O is made behind a closed gate
// and must return while the gate still holds its stream.
//
// Memory: cudaMemGetInfo's used bytes (the whole device's) and the process's resident set, every
// second; "start" is after the models are loaded, "warm-up" the first sample at or after
// --warmup-seconds. Flat: no sample after warm-up above the warm-up's by more than 32 MiB (device)
// or 64 MiB (host). Prints a summary table and exits 1 on a wrong output, a broken promise or
// memory that is not flat; without a GPU it prints "no GPU: ..." and exits 0 (ctest: skipped).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/executor.h"
#include "contract_fuzz/gate.h"
#include "contract_fuzz/oracle.h"
#include "contract_fuzz/rng.h"
#include "session/session.h"
#include "engines/cuda_test_engine.h"
#include "green/probe.h"
#include "green/split.h"

namespace trtet_test::load {
namespace {

namespace ex = torch_tensorrt::executorch_backend;
using fuzz::CallArgs;
using fuzz::CallPlan;
using fuzz::EngineKind;
using fuzz::EngineModel;
using fuzz::EngineSpec;
using fuzz::error_name;
using fuzz::Mem;
using fuzz::Rng;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kDeviceSlack = 32 * kMiB;
constexpr std::size_t kHostSlack = 64 * kMiB;
constexpr int kGateTimeoutMs = 2000;
constexpr int kSmCheckEvery = 64;  ///< calls of a thread between reads of its model's recorded SMs

struct Options {
  double seconds = 20;
  double warmup_seconds = 5;
  int threads = 8;
  int partitions = 4;
  std::string csv;
  std::uint64_t seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "%s\nusage: trtet_load [--seconds S | --minutes M] [--warmup-seconds W] [--threads T] "
               "[--partitions P] [--csv FILE] [--seed N]\n",
               why.c_str());
  std::exit(2);
}

double number(const char* text, const char* flag, double lo, double hi) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= lo && value <= hi)) {
    usage(std::string("bad ") + flag + " " + text + " (from " + std::to_string(lo) + " to " + std::to_string(hi) + ")");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("missing the value of " + arg);
    const char* value = argv[++i];
    if (arg == "--seconds") {
      options.seconds = number(value, "--seconds", 1, 24 * 3600);
    } else if (arg == "--minutes") {
      options.seconds = 60 * number(value, "--minutes", 0.02, 24 * 60);
    } else if (arg == "--warmup-seconds") {
      options.warmup_seconds = number(value, "--warmup-seconds", 0, 3600);
    } else if (arg == "--threads") {
      options.threads = static_cast<int>(number(value, "--threads", 1, 64));
    } else if (arg == "--partitions") {
      options.partitions = static_cast<int>(number(value, "--partitions", 1, 16));
    } else if (arg == "--csv") {
      options.csv = value;
    } else if (arg == "--seed") {
      options.seed = static_cast<std::uint64_t>(number(value, "--seed", 0, 1e18));
    } else {
      usage("unknown flag " + arg);
    }
  }
  if (options.warmup_seconds >= options.seconds) usage("--warmup-seconds must be shorter than the run");
  return options;
}

/// The device's used bytes (cudaMemGetInfo) and the process's resident set.
struct Sample {
  double at_s = 0;
  std::size_t device_used = 0;
  std::size_t host_rss = 0;
  std::uint64_t calls = 0;
};

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::size_t device_used_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return total - free;
}

/// One model: a session over a test engine, and what the oracle knows of it.
struct Model {
  explicit Model(const EngineSpec& spec) : model(spec) {}
  EngineModel model;
  std::unique_ptr<ex::delegate::Session> session;
  CudaTestEngine* engine = nullptr;  ///< owned by the session
  int partition = -1;                ///< the one partition it is called on (SM-checked), or -1: several
};

ex::Status make_model(Model& m) {
  auto engine = m.model.make(0);
  TRTET_RETURN_IF_ERROR(engine.status());
  m.engine = dynamic_cast<CudaTestEngine*>(engine->get());
  m.session = std::make_unique<ex::delegate::Session>(std::move(engine).value(), fuzz::session_options(m.model.spec()));
  return m.session->initialize();
}

EngineSpec spec_of(EngineKind kind, std::int64_t spin_us, int profiles, bool graphs, bool record_sms) {
  EngineSpec spec;
  spec.kind = kind;
  spec.spin_us = spin_us;
  spec.profiles = profiles;
  spec.graphs = graphs;
  spec.record_sms = record_sms;
  spec.max_rows = fuzz::kSmallMaxRows;
  spec.staging_slots = 2;
  if (kind == EngineKind::kMulti) spec.plain_outputs = 2;
  if (graphs) spec.budget_bytes = 4 * kMiB;
  return spec;
}

/// What every thread adds up.
struct Totals {
  fuzz::Tally tally;
  std::atomic<std::uint64_t> ok_calls{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<bool> stop{false};
  std::mutex print;
  int printed = 0;

  void fail(int thread, const std::string& what) {
    failures.fetch_add(1);
    std::lock_guard<std::mutex> lock(print);
    if (printed++ < 20) std::fprintf(stderr, "load: FAILURE (thread %d): %s\n", thread, what.c_str());
  }
};

Mem draw_mem(Rng& rng) {
  switch (rng.weighted({40, 25, 25, 10})) {
    case 0: return Mem::kDevice;
    case 1: return Mem::kPinned;
    case 2: return Mem::kPageable;
    default: return Mem::kManaged;
  }
}

CallPlan draw_call(Rng& rng, const EngineModel& model) {
  CallPlan plan;
  plan.guard = rng.chance(0.85);
  plan.stream.source = fuzz::StreamSource::kGreen;  // the thread's own stream (its partition's)
  plan.mems.resize(static_cast<std::size_t>(model.io_count()));
  plan.hints.assign(plan.mems.size(), false);
  for (Mem& mem : plan.mems) mem = draw_mem(rng);
  // Rows log-uniform over 0 .. max_rows (an empty call now and then), columns 1 .. 4.
  const double log_rows = rng.uniform_real(0, std::log2(static_cast<double>(model.spec().max_rows)));
  plan.shape.rows = rng.chance(0.02) ? 0 : static_cast<std::int64_t>(std::exp2(log_rows));
  plan.shape.cols = rng.uniform(1, fuzz::kMaxCols);
  plan.data_seed = rng.next();
  plan.scribble = rng.chance(0.3);
  plan.stale_output_shapes = rng.chance(0.3);
  plan.null_empty = rng.chance(0.2);
  plan.caller_spin_us = rng.chance(0.1) ? rng.uniform(50, 300) : 0;
  return plan;
}

/// One thread's loop: calls on `stream` until told to stop.
void run_thread(int index, Model& model, cudaStream_t stream, const std::vector<int>& partition_sms,
                std::uint64_t seed, Totals& totals) {
  if (cudaSetDevice(0) != cudaSuccess) return totals.fail(index, "cudaSetDevice(0)");
  cudaStream_t io = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking); e != cudaSuccess) {
    return totals.fail(index, "cudaStreamCreate: " + error_name(e));
  }
  auto gate = fuzz::Gate::create(kGateTimeoutMs);
  if (!gate.ok()) return totals.fail(index, "Gate::create: " + gate.status().to_string());
  fuzz::BufferPool pool;
  Rng rng(fuzz::mix(seed, static_cast<std::uint64_t>(index)));
  std::uint64_t calls = 0;
  while (!totals.stop.load(std::memory_order_relaxed)) {
    CallPlan plan = draw_call(rng, model.model);
    // An SM-checked model is always called under a guard: without one the call runs on the
    // session's own stream, on the whole device.
    if (model.partition >= 0) plan.guard = true;
    if (!model.model.in_profile(plan.shape)) continue;
    pool.release_all();  // the previous call is complete: its checks waited for everything it promised
    auto prepared = CallArgs::prepare(model.model, plan, pool, io);
    if (!prepared.ok()) return totals.fail(index, "preparing a call: " + prepared.status().to_string());
    CallArgs& args = **prepared;
    const cudaStream_t ordered = plan.guard ? stream : cudaStreamPerThread;
    if (plan.caller_spin_us > 0) {
      const ex::Status queued = args.queue_caller_work(ordered);
      if (!queued.ok()) return totals.fail(index, "queueing caller work: " + queued.to_string());
    }
    const bool gated = plan.guard && args.device_only();
    fuzz::Gate::Ticket ticket;
    if (gated) {
      auto closed = gate->close(ordered);
      if (!closed.ok()) return totals.fail(index, "closing the gate: " + closed.status().to_string());
      ticket = *closed;
    }
    ex::Status status;
    if (plan.guard) {
      ex::CudaStreamGuard guard(stream);
      status = model.session->execute(args.views(), args.count());
    } else {
      status = model.session->execute(args.views(), args.count());
    }
    if (gated) {
      const cudaError_t query = cudaStreamQuery(ordered);
      const bool in_time = Clock::now() < ticket.closed_at + std::chrono::milliseconds(kGateTimeoutMs - 200);
      gate->open(ticket);
      if (status.ok() && in_time) {
        totals.tally.busy_at_return.fetch_add(1, std::memory_order_relaxed);
        if (query != cudaErrorNotReady) {
          totals.fail(index, "a guarded call with device-only I/O waited for its stream: cudaStreamQuery right after "
                             "it gave " + error_name(query) + " though a gate held the stream");
        }
      }
    }
    fuzz::CallContext context;
    context.guard = plan.guard;
    context.stream = stream;
    context.io = io;
    context.scribble = plan.scribble;
    if (fuzz::Verdict v = fuzz::check_call(args, status, fuzz::Expect::kSuccess, context, totals.tally)) {
      totals.fail(index, std::string(fuzz::to_string(v->category)) + ": " + v->message + " [" + fuzz::to_string(plan) +
                             "]");
    } else {
      totals.ok_calls.fetch_add(1, std::memory_order_relaxed);
    }
    ++calls;
    if (model.partition >= 0 && calls % kSmCheckEvery == 0) {
      auto sms = model.engine->recorded_sms();
      if (!sms.ok()) return totals.fail(index, "reading the recorded SMs: " + sms.status().to_string());
      totals.tally.sm_checks.fetch_add(1, std::memory_order_relaxed);
      for (int sm : *sms) {
        if (!std::binary_search(partition_sms.begin(), partition_sms.end(), sm)) {
          totals.fail(index, "a kernel of the model ran on SM " + std::to_string(sm) + ", outside its partition (" +
                                 std::to_string(partition_sms.size()) + " SMs)");
          break;
        }
      }
    }
  }
  (void)cudaStreamSynchronize(io);
  (void)cudaStreamDestroy(io);
}

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return text;
}

int run(const Options& options) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    std::printf("no GPU: the load test needs a CUDA device\n");
    return 0;
  }
  if (cudaSetDevice(0) != cudaSuccess) return 1;
  auto split = ex::green::split_device(0, ex::green::SplitRequest::equal_groups(static_cast<unsigned>(options.partitions)));
  if (!split.ok()) {
    std::fprintf(stderr, "load: split_device: %s\n", split.status().to_string().c_str());
    return 1;
  }
  std::vector<ex::green::Partition>& partitions = *split;
  const int parts = static_cast<int>(partitions.size());
  std::vector<std::vector<int>> partition_sms(static_cast<std::size_t>(parts));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(options.threads));
  std::string sizes;
  for (int p = 0; p < parts; ++p) sizes += (p ? "," : "") + std::to_string(partitions[static_cast<std::size_t>(p)].granted_sms());
  for (int t = 0; t < options.threads; ++t) {
    auto stream = partitions[static_cast<std::size_t>(t % parts)].context.make_stream();
    if (!stream.ok()) {
      std::fprintf(stderr, "load: make_stream: %s\n", stream.status().to_string().c_str());
      return 1;
    }
    streams[static_cast<std::size_t>(t)] = *stream;
    if (t < parts) {
      auto sms = ex::green::probe_sms(*stream);
      if (!sms.ok()) {
        std::fprintf(stderr, "load: probe_sms: %s\n", sms.status().to_string().c_str());
        return 1;
      }
      partition_sms[static_cast<std::size_t>(t)] = *sms;
      std::sort(partition_sms[static_cast<std::size_t>(t)].begin(), partition_sms[static_cast<std::size_t>(t)].end());
    }
  }

  // Models: one per partition, SM-recording, called from that partition only; two more shared.
  const EngineKind own_kinds[] = {EngineKind::kElementwise, EngineKind::kAux, EngineKind::kMulti, EngineKind::kSum};
  std::vector<std::unique_ptr<Model>> models;
  for (int p = 0; p < parts; ++p) {
    const EngineKind kind = own_kinds[p % 4];
    models.push_back(std::make_unique<Model>(spec_of(kind, kind == EngineKind::kSum ? 0 : 200, 1 + p % 2, false, true)));
    models.back()->partition = p;
  }
  models.push_back(std::make_unique<Model>(spec_of(EngineKind::kElementwise, 100, 1, /*graphs=*/true, false)));
  models.push_back(std::make_unique<Model>(spec_of(EngineKind::kMulti, 150, 3, false, false)));
  for (auto& m : models) {
    const ex::Status made = make_model(*m);
    if (!made.ok()) {
      std::fprintf(stderr, "load: making model %s: %s\n", fuzz::to_string(m->model.spec()).c_str(), made.to_string().c_str());
      return 1;
    }
  }
  std::vector<Model*> of_thread(static_cast<std::size_t>(options.threads));
  for (int t = 0; t < options.threads; ++t) {
    of_thread[static_cast<std::size_t>(t)] =
        t < parts ? models[static_cast<std::size_t>(t)].get()
                  : models[static_cast<std::size_t>(parts + (t - parts) % 2)].get();
  }
  std::printf("load: %d threads, %zu models, %d partitions (%s SMs), %.0f s (warm-up %.0f s)\n", options.threads,
              models.size(), parts, sizes.c_str(), options.seconds, options.warmup_seconds);
  for (std::size_t i = 0; i < models.size(); ++i) {
    std::printf("  model %zu: %s%s\n", i, fuzz::to_string(models[i]->model.spec()).c_str(),
                models[i]->partition >= 0 ? (" on partition " + std::to_string(models[i]->partition)).c_str() : " (shared)");
  }
  std::fflush(stdout);

  Totals totals;
  const Clock::time_point start = Clock::now();
  std::vector<Sample> samples;
  samples.push_back(Sample{0, device_used_bytes(), resident_bytes(), 0});
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    const int p = t % parts;
    threads.emplace_back(run_thread, t, std::ref(*of_thread[static_cast<std::size_t>(t)]),
                         streams[static_cast<std::size_t>(t)], std::cref(partition_sms[static_cast<std::size_t>(p)]),
                         options.seed, std::ref(totals));
  }
  std::ofstream csv;
  if (!options.csv.empty()) {
    csv.open(options.csv);
    csv << "seconds,device_used_bytes,host_rss_bytes,calls\n";
  }
  auto elapsed = [&start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (int tick = 1; elapsed() < options.seconds && totals.failures.load() == 0; ++tick) {
    std::this_thread::sleep_until(start + std::chrono::seconds(tick));
    const Sample s{elapsed(), device_used_bytes(), resident_bytes(), totals.ok_calls.load()};
    samples.push_back(s);
    if (csv) csv << s.at_s << ',' << s.device_used << ',' << s.host_rss << ',' << s.calls << '\n';
    if (tick % 60 == 0) {
      std::printf("load: %.0f s, %llu calls, device %s MiB, host %s MiB\n", s.at_s,
                  static_cast<unsigned long long>(s.calls), mib(s.device_used).c_str(), mib(s.host_rss).c_str());
      std::fflush(stdout);
    }
  }
  totals.stop.store(true);
  for (std::thread& t : threads) t.join();

  const Sample& first = samples.front();
  const Sample* warm = &samples.back();
  for (const Sample& s : samples) {
    if (s.at_s >= options.warmup_seconds) {
      warm = &s;
      break;
    }
  }
  const Sample& last = samples.back();
  std::size_t device_max = 0, host_max = 0;
  for (const Sample& s : samples) {
    if (s.at_s < warm->at_s) continue;
    device_max = std::max(device_max, s.device_used);
    host_max = std::max(host_max, s.host_rss);
  }
  const bool device_flat = device_max <= warm->device_used + kDeviceSlack;
  const bool host_flat = host_max <= warm->host_rss + kHostSlack;
  std::printf("\n%-22s %18s %16s %12s\n", "memory", "device used, MiB", "host RSS, MiB", "calls");
  std::printf("%-22s %18s %16s %12llu\n", "start (models loaded)", mib(first.device_used).c_str(),
              mib(first.host_rss).c_str(), 0ull);
  std::printf("%-22s %18s %16s %12llu\n", ("warm-up (" + std::to_string(static_cast<int>(warm->at_s)) + " s)").c_str(),
              mib(warm->device_used).c_str(), mib(warm->host_rss).c_str(), static_cast<unsigned long long>(warm->calls));
  std::printf("%-22s %18s %16s %12llu\n", ("end (" + std::to_string(static_cast<int>(last.at_s)) + " s)").c_str(),
              mib(last.device_used).c_str(), mib(last.host_rss).c_str(), static_cast<unsigned long long>(last.calls));
  std::printf("%-22s %18s %16s\n", "max after warm-up", mib(device_max).c_str(), mib(host_max).c_str());
  const fuzz::Tally& tally = totals.tally;
  std::printf("load-test summary: %llu calls right, %llu failures, %zu samples; %llu tensors compared (%.2f GiB); "
              "promises checked: %llu busy-at-return, %llu SM reads; memory %s after warm-up (device +%s MiB at most, "
              "host +%s MiB)\n",
              static_cast<unsigned long long>(totals.ok_calls.load()),
              static_cast<unsigned long long>(totals.failures.load()), samples.size(),
              static_cast<unsigned long long>(tally.tensors.load()),
              static_cast<double>(tally.bytes.load()) / static_cast<double>(1ull << 30),
              static_cast<unsigned long long>(tally.busy_at_return.load()),
              static_cast<unsigned long long>(tally.sm_checks.load()), device_flat && host_flat ? "flat" : "NOT flat",
              mib(device_max > warm->device_used ? device_max - warm->device_used : 0).c_str(),
              mib(host_max > warm->host_rss ? host_max - warm->host_rss : 0).c_str());
  for (auto& m : models) m->session->destroy();
  return totals.failures.load() == 0 && totals.ok_calls.load() > 0 && device_flat && host_flat ? 0 : 1;
}

}  // namespace
}  // namespace trtet_test::load

int main(int argc, char** argv) { return trtet_test::load::run(trtet_test::load::parse(argc, argv)); }
