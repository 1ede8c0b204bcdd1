// The GPU scenarios (docs/PERFORMANCE.md names each and its rows): each row a ratio taken in one
// run, printed as a table and written to CSV.
//   trtet-scenarios [--only isolation,isolation_host_io,back_to_back] [--out DIR] [--calls N]
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/check.h"
#include "cuda/device.h"
#include "session/session.h"
#include "staging/host_copy_pool.h"
#include "engines/test_engine_factory.h"
#include "green/split.h"
#include "isolation.h"
#include "scenarios.h"

namespace trtet_bench {

std::unique_ptr<ex::delegate::Session> spin_session(const SpinOptions& options,
                                                    ex::delegate::SessionOptions session_options) {
  auto engine = SpinEngine::create(0, options);
  require(engine.status(), "SpinEngine::create");
  auto session = std::make_unique<ex::delegate::Session>(std::move(engine).value(), session_options);
  require(session->initialize(), "Session::initialize");
  return session;
}

namespace {

using ex::delegate::Session;
using ex::delegate::TensorView;

// ---- isolation ----------------------------------------------------------------------------------
void isolation(const Config& config, std::vector<Row>& rows) {
  IsolationOptions options;
  options.calls = config.calls;
  auto result = run_isolation(options);
  require(result.status(), "isolation");
  const IsolationResult& r = *result;
  write_latency_samples(config.out_dir + "/isolation_samples.csv", "isolation: victim latency alone and beside an SM-flooding engine",
                {{"green alone", r.green_alone.samples_us},
                 {"green beside", r.green_beside.samples_us},
                 {"whole GPU alone", r.shared_alone.samples_us},
                 {"whole GPU beside", r.shared_beside.samples_us}});
  std::vector<std::string> csv;
  for (const Condition* c : {&r.green_alone, &r.green_beside, &r.shared_alone, &r.shared_beside}) {
    csv.push_back(format("%s,%.2f,%.2f,%.2f,%zu", c->name, c->latency.p50, c->latency.p99, c->latency.mean, c->latency.n));
  }
  append_csv(config.out_dir + "/isolation.csv", "condition,p50_us,p99_us,mean_us,calls", csv);
  std::printf("isolation: victim %u SMs (observed %zu), aggressor %u SMs (observed %zu), overlap %zu\n", r.victim_granted,
              r.victim_observed, r.aggressor_granted, r.aggressor_observed, r.overlap);
  for (const Condition* c : {&r.green_alone, &r.green_beside, &r.shared_alone, &r.shared_beside}) {
    std::printf("    %-28s p50 %8.1f us   p99 %8.1f us\n", c->name, c->latency.p50, c->latency.p99);
  }
  rows.push_back({"isolation.green_p99", "isolation, green contexts: p99 beside / alone",
                  format("%.1f us", r.green_beside.latency.p99), format("%.1f us", r.green_alone.latency.p99),
                  r.green_p99_ratio(), "<= 1.05", r.green_p99_ratio() <= 1.05});
  rows.push_back({"isolation.whole_gpu_p99", "isolation, whole GPU: p99 beside / alone", format("%.1f us", r.shared_beside.latency.p99),
                  format("%.1f us", r.shared_alone.latency.p99), r.shared_p99_ratio(), "(contrast)", true});
}

// ---- isolation_host_io --------------------------------------------------------------------------
// isolation with host I/O: the latency-critical engine with 4 MiB pageable input and output on a
// 32-SM green context, alone and beside an engine of 100 ms, also with 4 MiB pageable I/O, that
// runs back to back in another thread on the rest of the GPU. Host staging must not couple them.
// .wide_neighbour: the same beside the neighbour with 64 MiB pageable I/O, whose copies are wide
// batches of the copy pool (Note [wide batches]): its wide workers must not couple them either.
void isolation_host_io(const Config& config, std::vector<Row>& rows) {
  namespace green = ex::green;
  const IsolationOptions defaults;
  auto parts = green::split_device(0, green::SplitRequest::counts({defaults.victim_sms}, /*remainder=*/true));
  require(parts.status(), "isolation_host_io split");
  auto victim_stream = (*parts)[0].context.make_stream();
  auto long_stream = (*parts)[1].context.make_stream();
  require(victim_stream.status(), "isolation_host_io victim stream");
  require(long_stream.status(), "isolation_host_io long-engine stream");
  const std::size_t n = (4u << 20) / sizeof(float);
  const std::size_t wide_n = (64u << 20) / sizeof(float);
  SpinOptions victim_options = defaults.victim;
  victim_options.max_elements = static_cast<std::int64_t>(n);
  const SpinOptions long_options{static_cast<int>(2 * (*parts)[1].granted_sms()), 128, 0, 100'000'000, 1,
                                 static_cast<std::int64_t>(wide_n)};
  auto victim = spin_session(victim_options);
  auto long_engine = spin_session(long_options);
  Buffer victim_in(Memory::kPageable, n), victim_out(Memory::kPageable, n);
  Buffer long_in(Memory::kPageable, wide_n), long_out(Memory::kPageable, wide_n);
  TensorView victim_args[2] = {victim_in.view(n), victim_out.view(n)};
  auto call_victim = [&] {
    ex::CudaStreamGuard guard(*victim_stream);
    require(victim->execute(victim_args, 2), "isolation_host_io victim execute");  // host outputs: written on return
  };
  auto measure = [&](std::vector<double>& samples) {
    for (int i = 0; i < 50; ++i) call_victim();
    samples.clear();
    for (int i = 0; i < config.calls; ++i) {
      const auto start = Clock::now();
      call_victim();
      samples.push_back(micros_since(start));
    }
  };
  // The victim measured beside the neighbour running back to back with `elements` of pageable I/O;
  // returns the neighbour's calls meanwhile.
  auto measure_beside = [&](std::size_t elements, std::vector<double>& samples) {
    TensorView long_args[2] = {long_in.view(elements), long_out.view(elements)};
    std::atomic<bool> stop{false};
    std::atomic<int> long_calls{0};
    std::thread load([&] {
      while (!stop.load()) {
        ex::CudaStreamGuard guard(*long_stream);
        require(long_engine->execute(long_args, 2), "isolation_host_io long engine execute");
        long_calls.fetch_add(1);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    measure(samples);
    stop = true;
    load.join();
    return long_calls.load();
  };
  std::vector<double> alone, beside, beside_wide;
  measure(alone);
  const int long_calls = measure_beside(n, beside);
  const int wide_calls = measure_beside(wide_n, beside_wide);
  std::fill(victim_out.data(), victim_out.data() + n, -1.0f);  // poison, then one more call, checked
  call_victim();
  for (std::size_t i = 0; i < n; i += 4093) {
    if (victim_out.data()[i] != 2.0f * victim_in.data()[i]) {
      std::fprintf(stderr, "isolation_host_io: wrong output at %zu\n", i);
      std::exit(4);
    }
  }
  const Percentiles pa = percentiles(alone), pb = percentiles(beside), pw = percentiles(beside_wide);
  const double ratio = pb.p99 / pa.p99;
  const double wide_ratio = pw.p99 / pa.p99;
  write_latency_samples(config.out_dir + "/isolation_host_io_samples.csv",
                "isolation_host_io: victim with 4 MiB pageable I/O, alone and beside a 100 ms engine with 4 MiB, then 64 MiB, host I/O",
                {{"green alone", alone}, {"green beside", beside}, {"green beside 64 MiB", beside_wide}});
  append_csv(config.out_dir + "/isolation_host_io.csv", "condition,p50_us,p99_us,mean_us,calls",
             {format("green alone,%.2f,%.2f,%.2f,%zu", pa.p50, pa.p99, pa.mean, pa.n),
              format("green beside,%.2f,%.2f,%.2f,%zu", pb.p50, pb.p99, pb.mean, pb.n),
              format("green beside 64 MiB,%.2f,%.2f,%.2f,%zu", pw.p50, pw.p99, pw.mean, pw.n)});
  std::printf("isolation_host_io: victim %u SMs, 4 MiB pageable in + out: p50 %.1f / p99 %.1f us alone, p50 %.1f / p99 %.1f us beside "
              "a 100 ms engine with 4 MiB pageable I/O on %u SMs (%d of its calls ran meanwhile); p50 %.1f / p99 %.1f us beside it "
              "with 64 MiB pageable I/O (%d calls; the copy pool's wide workers have copied %llu tasks in this process)\n",
              (*parts)[0].granted_sms(), pa.p50, pa.p99, pb.p50, pb.p99, (*parts)[1].granted_sms(), long_calls, pw.p50, pw.p99,
              wide_calls, static_cast<unsigned long long>(ex::staging::HostCopyPool::shared().wide_worker_tasks()));
  rows.push_back({"isolation_host_io.green_p99", "isolation, 4 MiB pageable I/O both sides, green: p99 beside/alone",
                  format("%.1f us", pb.p99), format("%.1f us", pa.p99), ratio, "<= 1.05", ratio <= 1.05});
  rows.push_back({"isolation_host_io.wide_neighbour", "the same beside a neighbour with 64 MiB pageable I/O: p99 beside/alone",
                  format("%.1f us", pw.p99), format("%.1f us", pa.p99), wide_ratio, "<= 1.05", wide_ratio <= 1.05});
}

// ---- host_overhead ------------------------------------------------------------------------------
// Host time per call of execute beyond driving the same engine directly. Host noise moves one
// measurement by more than the goal, so it is taken 5 times, the engine and execute alternating,
// and the median of the 5 differences is the figure.
void host_overhead(const Config& config, std::vector<Row>& rows) {
  // Two engines of the same build: one driven directly, one inside the session.
  auto direct_or = trtet_test::make_test_engine("elementwise n=256", 0);
  auto owned_or = trtet_test::make_test_engine("elementwise n=256", 0);
  require(direct_or.status(), "make_test_engine");
  require(owned_or.status(), "make_test_engine");
  ex::engine::Engine* engine = direct_or->get();
  // Two sets of tensors: host_overhead.repeated_call calls with the same set every time (as a
  // memory-planned ExecuTorch program does: the session repeats the call, Note [repeated calls]);
  // host_overhead.prepared_call alternates them, so every call is prepared in full.
  Buffer x(Memory::kDevice, 256), y(Memory::kDevice, 256), out(Memory::kDevice, 256);
  Buffer x2(Memory::kDevice, 256), y2(Memory::kDevice, 256), out2(Memory::kDevice, 256);
  TensorView sets[2][3] = {{x.view(256), y.view(256), out.view(256)}, {x2.view(256), y2.view(256), out2.view(256)}};
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  // What any caller of the engine does per call: set shapes, infer, bind, enqueue.
  auto engine_call = [&](TensorView* args) {
    require(engine->set_input_shape(0, ex::Shape{256}), "shape");
    require(engine->set_input_shape(1, ex::Shape{256}), "shape");
    require(engine->infer_shapes().status(), "infer");
    require(engine->output_shape(2).status(), "output shape");
    for (int i = 0; i < 3; ++i) require(engine->set_tensor_address(i, args[i].data), "addr");
    require(engine->enqueue(stream), "enqueue");
  };
  Session session(std::move(owned_or).value());
  require(session.initialize(), "initialize");
  auto execute = [&](TensorView* args) {
    ex::CudaStreamGuard guard(stream);
    require(session.execute(args, 3), "execute");
  };
  int turn = 0;  // host_overhead.prepared_call's alternation
  struct Variant {
    const char* id;
    bool alternate;
  };
  for (const Variant variant : {Variant{"host_overhead.repeated_call", false}, Variant{"host_overhead.prepared_call", true}}) {
    auto args = [&] { return sets[variant.alternate ? (turn++ & 1) : 0]; };
    auto direct_call = [&] { engine_call(args()); };
    auto run = [&] { execute(args()); };
    for (int i = 0; i < 1000; ++i) {
      direct_call();
      run();
    }
    const auto before = session.stats();
    constexpr int kRuns = 5;
    std::vector<double> direct, through, overhead;
    std::vector<std::string> csv;
    // Each run: 40 pairs of 500 direct calls and 500 executes, the stream drained before each batch
    // and not timed; the run's figures are the medians over its pairs (so drift over a run, which
    // moved single back-to-back loops by more than the goal, falls on both sides of a pair).
    for (int r = 0; r < kRuns; ++r) {
      constexpr int kPairs = 40, kBatch = 500;
      std::vector<double> pair_direct, pair_through, pair_overhead;
      for (int p = 0; p < kPairs; ++p) {
        pair_direct.push_back(batch_us_per_call(stream, direct_call, kBatch));
        pair_through.push_back(batch_us_per_call(stream, run, kBatch));
        pair_overhead.push_back(pair_through.back() - pair_direct.back());
      }
      direct.push_back(percentiles(pair_direct).p50);
      through.push_back(percentiles(pair_through).p50);
      overhead.push_back(percentiles(pair_overhead).p50);
      csv.push_back(format("%s,%d,%.4f,%.4f,%.4f", variant.id, r + 1, through.back(), direct.back(), overhead.back()));
    }
    const auto after = session.stats();
    const std::uint64_t calls = after.calls - before.calls, repeats = after.repeated_enqueues - before.repeated_enqueues;
    // Nearest-rank p50 of 5 values: the median.
    const double median = percentiles(overhead).p50, median_direct = percentiles(direct).p50,
                 median_through = percentiles(through).p50;
    std::string runs;
    for (double o : overhead) runs += format(" %.3f", o);
    std::printf("%s: %d runs of 40 pairs of 500-call batches, %s, the engine driven directly (shapes, addresses, "
                "enqueue) then execute: overhead per run (median of its pairs, us):%s; median %.3f us (execute median %.3f us/call, engine %.3f "
                "us/call); %llu of %llu calls repeated the one before\n",
                variant.id, kRuns, variant.alternate ? "two sets of tensors in turn" : "the same tensors every call",
                runs.c_str(), median, median_through, median_direct, static_cast<unsigned long long>(repeats),
                static_cast<unsigned long long>(calls));
    csv.push_back(format("%s,median,%.4f,%.4f,%.4f", variant.id, median_through, median_direct, median));
    append_csv(config.out_dir + "/host_overhead.csv", "variant,run,execute_us,engine_us,overhead_us", csv);
    rows.push_back({variant.id,
                    variant.alternate ? "host overhead of execute, every call prepared in full, median of 5"
                                      : "host overhead of execute beyond the engine (2 in, 1 out), median of 5",
                    format("%.2f us", median), format("engine %.2f us", median_direct), median, "<= 0.3 us",
                    median <= 0.3});
  }
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

// ---- after_idle ---------------------------------------------------------------------------------
// One call after the calling thread slept, as a served model's instance thread sleeps between
// requests (about 400 us at 2,000 requests/s), against the same call made with no sleep before it:
// the host time of execute (every call prepared in full, as a server's new buffers make it) and of
// the engine driven directly, each call timed alone with the stream empty before it. What the sleep
// adds to both is the platform's (cold caches, a core woken from idle); what it adds to execute
// alone is the delegate's. Measured, no goal.
void after_idle(const Config& config, std::vector<Row>& rows) {
  auto direct_or = trtet_test::make_test_engine("elementwise n=256", 0);
  auto owned_or = trtet_test::make_test_engine("elementwise n=256", 0);
  require(direct_or.status(), "make_test_engine");
  require(owned_or.status(), "make_test_engine");
  ex::engine::Engine* engine = direct_or->get();
  Buffer x(Memory::kDevice, 256), y(Memory::kDevice, 256), out(Memory::kDevice, 256);
  Buffer x2(Memory::kDevice, 256), y2(Memory::kDevice, 256), out2(Memory::kDevice, 256);
  TensorView sets[2][3] = {{x.view(256), y.view(256), out.view(256)}, {x2.view(256), y2.view(256), out2.view(256)}};
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  auto engine_call = [&](TensorView* args) {
    require(engine->set_input_shape(0, ex::Shape{256}), "shape");
    require(engine->set_input_shape(1, ex::Shape{256}), "shape");
    require(engine->infer_shapes().status(), "infer");
    require(engine->output_shape(2).status(), "output shape");
    for (int i = 0; i < 3; ++i) require(engine->set_tensor_address(i, args[i].data), "addr");
    require(engine->enqueue(stream), "enqueue");
  };
  Session session(std::move(owned_or).value());
  require(session.initialize(), "initialize");
  auto execute = [&](TensorView* args) {
    ex::CudaStreamGuard guard(stream);
    require(session.execute(args, 3), "execute");
  };
  int turn = 0;
  for (int i = 0; i < 200; ++i) {  // warm-up, both ways
    engine_call(sets[turn++ & 1]);
    execute(sets[turn++ & 1]);
  }
  require_cuda(cudaStreamSynchronize(stream), "drain");
  const int samples = std::max(100, std::min(config.calls, 2000));
  constexpr int kSleepUs = 500;
  // [sleep?][execute?]: host microseconds of one call each.
  std::vector<double> times[2][2];
  for (int i = 0; i < samples; ++i) {
    for (int slept = 0; slept < 2; ++slept) {
      for (int through = 0; through < 2; ++through) {
        require_cuda(cudaStreamSynchronize(stream), "drain");
        if (slept) std::this_thread::sleep_for(std::chrono::microseconds(kSleepUs));
        TensorView* args = sets[turn++ & 1];
        const auto start = Clock::now();
        if (through) {
          execute(args);
        } else {
          engine_call(args);
        }
        times[slept][through].push_back(micros_since(start));
      }
    }
  }
  require_cuda(cudaStreamSynchronize(stream), "drain");
  require_cuda(cudaStreamDestroy(stream), "destroy");
  Percentiles p[2][2];
  std::vector<std::string> csv;
  for (int slept = 0; slept < 2; ++slept) {
    for (int through = 0; through < 2; ++through) {
      p[slept][through] = percentiles(times[slept][through]);
      csv.push_back(format("%s,%s,%.3f,%.3f,%.3f", slept ? "after_sleep" : "no_sleep", through ? "execute" : "engine",
                           p[slept][through].p50, p[slept][through].p99, p[slept][through].mean));
    }
  }
  append_csv(config.out_dir + "/after_idle.csv", "before,call,p50_us,p99_us,mean_us", csv);
  std::printf("after_idle: %d calls each, every call prepared in full, timed alone with its stream empty; host us "
              "p50 / p99: engine directly %.2f / %.2f with no sleep, %.2f / %.2f after %d us asleep; execute %.2f / "
              "%.2f with no sleep, %.2f / %.2f after the sleep\n",
              samples, p[0][0].p50, p[0][0].p99, p[1][0].p50, p[1][0].p99, kSleepUs, p[0][1].p50, p[0][1].p99,
              p[1][1].p50, p[1][1].p99);
  const double hot_overhead = p[0][1].p50 - p[0][0].p50, idle_overhead = p[1][1].p50 - p[1][0].p50;
  rows.push_back({"after_idle.execute", "host time of one execute after a 500 us sleep / with no sleep (p50s)",
                  format("%.2f us", p[1][1].p50), format("%.2f us with no sleep", p[0][1].p50),
                  p[1][1].p50 / p[0][1].p50, "(measured)", true});
  rows.push_back({"after_idle.engine", "the engine driven directly, the same: after the sleep / with no sleep",
                  format("%.2f us", p[1][0].p50), format("%.2f us with no sleep", p[0][0].p50),
                  p[1][0].p50 / p[0][0].p50, "(measured)", true});
  rows.push_back({"after_idle.overhead", "execute minus the engine directly (p50s), after the sleep / with none",
                  format("%.2f us", idle_overhead), format("%.2f us with no sleep", hot_overhead),
                  hot_overhead > 0 ? idle_overhead / hot_overhead : 0.0, "(measured)", true});
}

// ---- back_to_back -------------------------------------------------------------------------------
void back_to_back(const Config& config, std::vector<Row>& rows) {
  SpinOptions options{132, 128, 0, 20'000, 1, 1 << 20};
  auto session = spin_session(options);
  const std::size_t n = 4096;
  Buffer x(Memory::kDevice, n), out(Memory::kDevice, n);
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const int kCalls = 3000;
  auto wall = [&](auto&& body) {
    require_cuda(cudaStreamSynchronize(stream), "sync");
    const auto start = Clock::now();
    for (int i = 0; i < kCalls; ++i) body();
    require_cuda(cudaStreamSynchronize(stream), "sync");
    return micros_since(start);
  };
  TensorView args[2] = {x.view(n), out.view(n)};
  auto execute = [&] {
    ex::CudaStreamGuard guard(stream);
    require(session->execute(args, 2), "execute");
  };
  for (int i = 0; i < 100; ++i) execute();
  const double gpu_bound = wall([&] { require(launch_spin_scale(x.data(), out.data(), n, options, stream), "launch"); });
  const double queued = wall(execute);
  const double synced = wall([&] {
    execute();
    require_cuda(cudaStreamSynchronize(stream), "sync");
  });
  cudaEvent_t previous = nullptr;
  require_cuda(cudaEventCreateWithFlags(&previous, cudaEventBlockingSync | cudaEventDisableTiming), "event");
  require_cuda(cudaEventRecord(previous, stream), "record");
  const double host_wait = wall([&] {
    require_cuda(cudaEventSynchronize(previous), "event sync");
    execute();
    require_cuda(cudaEventRecord(previous, stream), "record");
  });
  cudaEventDestroy(previous);
  const double share = gpu_bound / queued;
  std::printf("back_to_back: %d calls of a 20 us engine: GPU-bound %.0f us, queued %.0f us (%.1f %%), sync per call %.0f us (%.1f %%), "
              "host wait on previous event %.0f us (%.1f %%)\n",
              kCalls, gpu_bound, queued, 100 * share, synced, 100 * gpu_bound / synced, host_wait,
              100 * gpu_bound / host_wait);
  append_csv(config.out_dir + "/back_to_back.csv", "mode,wall_us,share_of_gpu_bound",
             {format("gpu_bound,%.1f,1.0", gpu_bound), format("queued,%.1f,%.4f", queued, share),
              format("sync_per_call,%.1f,%.4f", synced, gpu_bound / synced),
              format("host_wait_previous_event,%.1f,%.4f", host_wait, gpu_bound / host_wait)});
  rows.push_back({"back_to_back.share_of_gpu_bound", "back-to-back calls of a 20 us engine, share of GPU-bound rate",
                  format("%.1f %%", 100 * share),
                  format("sync/call %.0f %%, host wait %.0f %%", 100 * gpu_bound / synced, 100 * gpu_bound / host_wait),
                  share, ">= 0.95", share >= 0.95});
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

// ---- cross_partition ----------------------------------------------------------------------------
void cross_partition(const Config& config, std::vector<Row>& rows) {
  namespace green = ex::green;
  auto parts = green::split_device(0, green::SplitRequest::counts({16}, /*remainder=*/true));
  require(parts.status(), "split");
  auto a_stream = (*parts)[0].context.make_stream();
  auto b_stream = (*parts)[1].context.make_stream();
  require(a_stream.status(), "stream A");
  require(b_stream.status(), "stream B");
  const unsigned b_sms = (*parts)[1].granted_sms();
  Buffer b_x(Memory::kDevice, 1024), b_out(Memory::kDevice, 1024);
  SpinOptions long_kernel{static_cast<int>(2 * b_sms), 256, 0, 10'000'000, 1, 1024};  // 10 ms kernels
  const std::size_t max_n = 1 << 20;
  Buffer in(Memory::kPageable, max_n), out(Memory::kPageable, max_n);

  // Each op's host time, by kind: 0 execute, 1 execute that grew staging, 2 destroy, 3 create.
  static const char* kOps[] = {"execute", "execute+grow", "destroy", "create"};
  using Samples = std::vector<double>[4];
  auto workload = [&](Samples& by_op, std::vector<double>& samples) {
    SpinOptions small{32, 128, 0, 0, 1, static_cast<std::int64_t>(max_n)};
    auto note = [&](int op, Clock::time_point start) {
      const double us = micros_since(start);
      by_op[op].push_back(us);
      samples.push_back(us);
    };
    // 20 lifetimes: create, 15 executes whose pageable I/O grows each time (every one grows the
    // staging), destroy.
    for (int cycle = 0; cycle < 20; ++cycle) {
      auto start = Clock::now();
      auto session = spin_session(small);
      note(3, start);
      for (int i = 0; i < 15; ++i) {
        const std::size_t n = std::min(max_n, (std::size_t{4096} << (i % 9)) + static_cast<std::size_t>(i) * 1024);
        TensorView args[2] = {in.view(n), out.view(n)};
        const auto grows = session->stats().staging_grows;
        start = Clock::now();
        {
          ex::CudaStreamGuard guard(*a_stream);
          require(session->execute(args, 2), "execute A");
        }
        note(session->stats().staging_grows != grows ? 1 : 0, start);
      }
      start = Clock::now();
      session.reset();
      note(2, start);
    }
  };
  // B's load: kernels of `kernel_ms` back to back until stopped. If an operation on A waited for
  // B it would take up to a whole kernel, so two kernel lengths tell a wait from host variance.
  auto with_load = [&](std::int64_t kernel_ms, Samples& by_op, std::vector<double>& samples) {
    SpinOptions kernel = long_kernel;
    kernel.spin_ns = kernel_ms * 1'000'000;
    std::atomic<bool> stop{false};
    std::thread load([&] {
      while (!stop.load()) {
        require(launch_spin_scale(b_x.data(), b_out.data(), 1024, kernel, *b_stream), "B kernel");
        cudaStreamSynchronize(*b_stream);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    workload(by_op, samples);
    stop = true;
    load.join();
  };
  std::vector<double> warm, idle, idle_again, busy, busy_long;
  Samples warm_ops, idle_ops, idle_again_ops, busy_ops, busy_long_ops;
  workload(warm_ops, warm);  // pools, module load
  // B idle and B busy alternate for kRounds rounds, pooled per condition: a single pair of 340-op
  // workloads drifted by up to 40 % between two idle runs on the 1xH200 (the noise floor below).
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    workload(idle_ops, idle);
    with_load(10, busy_ops, busy);
  }
  workload(idle_again_ops, idle_again);  // the noise floor: idle against idle
  with_load(50, busy_long_ops, busy_long);
  const Percentiles pi = percentiles(idle), pb = percentiles(busy), pi2 = percentiles(idle_again),
                    pl = percentiles(busy_long);
  std::printf("    %-13s %5s | %-21s | %-21s | %-21s | %-21s\n", "op", "n", "B idle p50/p99 us", "B 10 ms p50/p99 us",
              "B idle again p50/p99", "B 50 ms p50/p99 us");
  for (int op = 0; op < 4; ++op) {
    const Percentiles oi = percentiles(idle_ops[op]), ob = percentiles(busy_ops[op]),
                      oi2 = percentiles(idle_again_ops[op]), ol = percentiles(busy_long_ops[op]);
    std::printf("    %-13s %5zu | %9.1f / %9.1f | %9.1f / %9.1f | %9.1f / %9.1f | %9.1f / %9.1f\n", kOps[op], oi.n,
                oi.p50, oi.p99, ob.p50, ob.p99, oi2.p50, oi2.p99, ol.p50, ol.p99);
  }
  const double max_long = *std::max_element(busy_long.begin(), busy_long.end());
  const double ratio = pb.p99 / pi.p99;
  std::printf("cross_partition: partition A ops: p99 %.1f us B idle, %.1f us B running 10 ms kernels (ratio %.3f), %.1f us B idle "
              "again (noise floor %.3f), %.1f us B running 50 ms kernels (max op %.1f us)\n",
              pi.p99, pb.p99, ratio, pi2.p99, pi2.p99 / pi.p99, pl.p99, max_long);
  append_csv(config.out_dir + "/cross_partition.csv", "condition,p50_us,p99_us,max_us,calls",
             {format("B_idle,%.2f,%.2f,%.2f,%zu", pi.p50, pi.p99, *std::max_element(idle.begin(), idle.end()), pi.n),
              format("B_10ms,%.2f,%.2f,%.2f,%zu", pb.p50, pb.p99, *std::max_element(busy.begin(), busy.end()), pb.n),
              format("B_idle_again,%.2f,%.2f,%.2f,%zu", pi2.p50, pi2.p99,
                     *std::max_element(idle_again.begin(), idle_again.end()), pi2.n),
              format("B_50ms,%.2f,%.2f,%.2f,%zu", pl.p50, pl.p99, max_long, pl.n)});
  rows.push_back({"cross_partition.ops_p99", "partition A execute+grow+destroy p99, B busy / B idle", format("%.1f us", pb.p99),
                  format("%.1f us (idle again %.1f)", pi.p99, pi2.p99), ratio, "<= 1.05", ratio <= 1.05});
}

// ---- caller_graph -------------------------------------------------------------------------------
void caller_graph(const Config& config, std::vector<Row>& rows) {
  SpinOptions tiny{1, 128, 0, 0, 1, 1 << 20};
  auto session = spin_session(tiny);
  const std::size_t n = 256;
  Buffer x(Memory::kDevice, n), out(Memory::kDevice, n);
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  TensorView args[2] = {x.view(n), out.view(n)};
  auto execute = [&] {
    ex::CudaStreamGuard guard(stream);
    require(session->execute(args, 2), "execute");
  };
  auto per_call = [&](auto&& body) { return host_us_per_call(stream, body); };
  for (int i = 0; i < 1000; ++i) execute();
  const double eager = per_call(execute);
  cudaGraph_t graph = nullptr;
  require_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  execute();
  require_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  std::size_t nodes = 0;
  require_cuda(cudaGraphGetNodes(graph, nullptr, &nodes), "nodes");
  for (int i = 0; i < 1000; ++i) require_cuda(cudaGraphLaunch(exec, stream), "launch");
  const double replay = per_call([&] { require_cuda(cudaGraphLaunch(exec, stream), "launch"); });
  std::printf("caller_graph: host time per inference: eager execute %.2f us, graph replay %.2f us (1 cudaGraphLaunch of %zu node(s))\n",
              eager, replay, nodes);
  append_csv(config.out_dir + "/caller_graph.csv", "mode,host_us_per_inference,graph_nodes",
             {format("eager,%.3f,", eager), format("graph,%.3f,%zu", replay, nodes)});
  rows.push_back({"caller_graph.replay_host_time", "host time per inference, graph replay / eager execute", format("%.2f us", replay),
                  format("%.2f us", eager), replay / eager, "1 graph launch", true});
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

// ---- delegate_graphs: delegate-owned CUDA graphs ------------------------------------------------
void delegate_graphs(const Config& config, std::vector<Row>& rows) {
  (void)config;
  const std::size_t n = 4096;
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  Buffer x(Memory::kDevice, n), out(Memory::kDevice, n);
  TensorView args[2] = {x.view(n), out.view(n)};
  // One graph launch of a one-kernel graph: the host-time floor of any graph replay.
  double launch_floor = 0;
  {
    SpinOptions one{16, 128, 0, 5000, 1, 1 << 20};
    cudaGraph_t graph = nullptr;
    require_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    require(launch_spin_scale(static_cast<const float*>(x.data()), static_cast<float*>(out.data()),
                              static_cast<std::int64_t>(n), one, stream),
            "spin kernel");
    require_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
    cudaGraphExec_t exec = nullptr;
    require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    launch_floor = host_us_per_call(stream, [&] { require_cuda(cudaGraphLaunch(exec, stream), "launch"); });
    // Where the host time of a replay goes: the launch, and the launch with the completion event
    // every call records.
    cudaEvent_t event = nullptr;
    require_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
    const double recorded = host_us_per_call(stream, [&] {
      require_cuda(cudaGraphLaunch(exec, stream), "launch");
      require_cuda(cudaEventRecord(event, stream), "record");
    });
    std::printf("delegate_graphs one graph launch %.2f us; a launch and a cudaEventRecord %.2f us\n", launch_floor, recorded);
    cudaEventDestroy(event);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  for (const int kernels : {1, 20}) {
    SpinOptions options{16, 128, 0, 5000, kernels, 1 << 20};  // kernels of 5 us on 16 blocks
    auto eager = spin_session(options);
    ex::delegate::SessionOptions graphs;
    graphs.use_cuda_graphs = true;
    auto replayed = spin_session(options, graphs);
    auto call = [&](Session& session) {
      ex::CudaStreamGuard guard(stream);
      require(session.execute(args, 2), "execute");
    };
    for (int i = 0; i < 100; ++i) {
      call(*eager);
      call(*replayed);
    }
    require(replayed->stats().graph_launches > 0 ? ex::Status::Ok() : ex::make_error(ex::ErrorCode::kInternal, "no graph"),
            "delegate_graphs graph mode launched no graph");
    const double host_eager = host_us_per_call(stream, [&] { call(*eager); });
    const double host_graph = host_us_per_call(stream, [&] { call(*replayed); });
    const int gpu_calls = 2000;
    const double gpu_eager = gpu_us_per_call(stream, gpu_calls, [&] { call(*eager); });
    const double gpu_graph = gpu_us_per_call(stream, gpu_calls, [&] { call(*replayed); });
    // The kernels' own time: the same kernels back to back in one graph, no delegate, no launch gaps.
    double kernels_own = 0;
    {
      cudaGraph_t graph = nullptr;
      require_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
      for (int i = 0; i < 50; ++i) {
        require(launch_spin_scale(static_cast<const float*>(x.data()), static_cast<float*>(out.data()),
                                  static_cast<std::int64_t>(n), options, stream),
                "spin kernels");
      }
      require_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
      cudaGraphExec_t exec = nullptr;
      require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
      require_cuda(cudaGraphLaunch(exec, stream), "warm-up");
      kernels_own = gpu_us_per_call(stream, 40, [&] { require_cuda(cudaGraphLaunch(exec, stream), "launch"); }) / 50;
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
    std::printf("delegate_graphs %d kernel(s) of 5 us: host per call eager %.2f us, graph %.2f us (one graph launch %.2f us); "
                "GPU per call eager %.2f us, graph %.2f us, the kernels' own %.2f us\n",
                kernels, host_eager, host_graph, launch_floor, gpu_eager, gpu_graph, kernels_own);
    append_csv(config.out_dir + "/delegate_graphs.csv",
               "kernels,host_us_eager,host_us_graph,host_us_one_graph_launch,gpu_us_eager,gpu_us_graph,gpu_us_kernels_own",
               {format("%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f", kernels, host_eager, host_graph, launch_floor, gpu_eager,
                       gpu_graph, kernels_own)});
    rows.push_back({kernels == 1 ? "delegate_graphs.host_1_kernel" : "delegate_graphs.host_20_kernels",
                    format("%d-kernel engine: host time per call, graph mode / (one graph launch + 1 us)", kernels),
                    format("%.2f us", host_graph), format("%.2f us + 1 us (eager %.2f us)", launch_floor, host_eager),
                    host_graph / (launch_floor + 1.0), "<= 1.00", host_graph <= launch_floor + 1.0});
    if (kernels == 20) {
      rows.push_back({"delegate_graphs.gpu_20_kernels", "20-kernel engine: GPU time per call, graph mode / the kernels' own",
                      format("%.2f us", gpu_graph), format("%.2f us (eager %.2f us)", kernels_own, gpu_eager),
                      gpu_graph / kernels_own, "<= 1.05", gpu_graph <= 1.05 * kernels_own});
    }
  }
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

// ---- profile_switch: the cost of an optimization-profile switch ---------------------------------
void profile_switch(const Config& config, std::vector<Row>& rows) {
  auto engine = trtet_test::make_test_engine("elementwise min=1x256 max=16x256 profiles=17x256:64x256", 0);
  require(engine.status(), "make_test_engine");
  auto session = std::make_unique<Session>(std::move(engine).value());
  require(session->initialize(), "Session::initialize");
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const std::size_t n = 64 * 256;
  Buffer x(Memory::kDevice, n), y(Memory::kDevice, n), out(Memory::kDevice, n);
  TensorView small[3] = {x.view(8 * 256), y.view(8 * 256), out.view(8 * 256)};
  TensorView large[3] = {x.view(48 * 256), y.view(48 * 256), out.view(48 * 256)};
  for (TensorView* views : {small, large}) {
    const std::int64_t rows_count = views == small ? 8 : 48;
    for (int i = 0; i < 3; ++i) views[i].shape = ex::Shape{rows_count, 256};
  }
  auto call = [&](TensorView* views) {
    ex::CudaStreamGuard guard(stream);
    require(session->execute(views, 3), "execute");
  };
  for (int i = 0; i < 100; ++i) call(i % 2 == 0 ? small : large);
  const double same = host_us_per_call(stream, [&] { call(small); });
  bool flip = false;
  const double switching = host_us_per_call(stream, [&] {
    call(flip ? large : small);
    flip = !flip;
  });
  std::printf("profile_switch: host per call on one profile %.2f us, alternating two profiles %.2f us: a switch costs %.2f us\n",
              same, switching, switching - same);
  append_csv(config.out_dir + "/profile_switch.csv", "mode,host_us_per_call",
             {format("same profile,%.3f", same), format("alternating profiles,%.3f", switching)});
  rows.push_back({"profile_switch.host_time", "host time per call alternating two profiles / staying on one", format("%.2f us", switching),
                  format("%.2f us", same), switching / same, "(measured)", true});
  require_cuda(cudaStreamDestroy(stream), "destroy");
}

}  // namespace
}  // namespace trtet_bench

int main(int argc, char** argv) {
  using namespace trtet_bench;
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      std::string list = argv[++i];
      for (std::size_t p = 0; p <= list.size();) {
        const std::size_t comma = std::min(list.find(',', p), list.size());
        config.only.insert(list.substr(p, comma - p));
        p = comma + 1;
      }
    } else if (arg == "--out" && i + 1 < argc) {
      config.out_dir = argv[++i];
    } else if (arg == "--calls" && i + 1 < argc) {
      config.calls = std::atoi(argv[++i]);
    } else {
      std::printf("usage: trtet-scenarios [--only NAME,...] [--out DIR] [--calls N]\n"
                  "  NAME: isolation isolation_host_io isolation_memory_bound host_overhead after_idle back_to_back\n"
                  "        pipelined_host_io host_staging cross_partition first_calls caller_graph\n"
                  "        session_memory delegate_graphs profile_switch (default: all)\n");
      return arg == "--help" ? 0 : 1;
    }
  }
  auto devices = ex::cuda::device_count();
  if (!devices.ok()) {
    std::fprintf(stderr, "trtet-scenarios: no GPU: %s\n", devices.status().message().c_str());
    return 2;
  }
  std::vector<Row> rows;
  if (config.wants("isolation")) isolation(config, rows);
  if (config.wants("isolation_host_io")) isolation_host_io(config, rows);
  if (config.wants("isolation_memory_bound")) isolation_memory_bound(config, rows);
  if (config.wants("host_overhead")) host_overhead(config, rows);
  if (config.wants("after_idle")) after_idle(config, rows);
  if (config.wants("back_to_back")) back_to_back(config, rows);
  if (config.wants("pipelined_host_io")) pipelined_host_io(config, rows);
  if (config.wants("host_staging")) host_staging(config, rows);
  if (config.wants("cross_partition")) cross_partition(config, rows);
  if (config.wants("first_calls")) first_calls(config, rows);
  if (config.wants("caller_graph")) caller_graph(config, rows);
  if (config.wants("session_memory")) session_memory(config, rows);
  if (config.wants("delegate_graphs")) delegate_graphs(config, rows);
  if (config.wants("profile_switch")) profile_switch(config, rows);

  std::vector<std::string> csv;
  std::printf("\n%-37s %-66s %-16s %-34s %8s %-14s %s\n", "row", "what it measures", "measured", "reference", "ratio",
              "goal", "met");
  for (const Row& r : rows) {
    std::printf("%-37s %-66s %-16s %-34s %8.3f %-14s %s\n", r.id.c_str(), r.what.c_str(), r.measured.c_str(),
                r.reference.c_str(), r.ratio, r.goal.c_str(), r.met ? "yes" : "NO");
    csv.push_back(format("%s,\"%s\",%s,\"%s\",%.4f,%s,%s", r.id.c_str(), r.what.c_str(), r.measured.c_str(),
                         r.reference.c_str(), r.ratio, r.goal.c_str(), r.met ? "yes" : "no"));
  }
  append_csv(config.out_dir + "/scenarios.csv", "id,scenario,measured,reference,ratio,goal,met", csv);
  return 0;
}
