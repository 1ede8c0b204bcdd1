// GPU tests of switching a plan set (torch_tensorrt/executorch/PlanSet.h) under load: what a switch
// costs (measured and printed, one line starting "plan_set.switch_cost"), a caller's captured graph
// across a switch (it keeps the partition it was captured on) beside the delegate's own graphs (one per
// partition), destruction right after switches with the last calls still running, and a set made on
// another GPU refused before anything is split.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "green/probe.h"
#include "plan/plan_set_ladder.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

// Half of what one split takes (about 8 MiB): less than this taken means nothing was split.
constexpr double kOneSplit = 4.0 * 1024 * 1024;
double taken_since(std::size_t before) { return static_cast<double>(before) - static_cast<double>(free_bytes()); }

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(i, values.size() - 1)];
}

ex::delegate::SessionOptions graphs_on() {
  ex::delegate::SessionOptions options;
  options.use_cuda_graphs = true;
  options.graph_cache_size = 16;
  return options;
}

// Every plan's partition of every model, probed: which (plan, model) a stream is, and its SMs.
struct Probed {
  std::map<cudaStream_t, std::pair<std::size_t, std::size_t>> where;  // stream -> (plan, model)
  std::vector<std::vector<std::vector<int>>> sms;                     // [plan][model]
  std::string failure;
};

Probed probe_all(const ex::PlanSetPartitions& parts) {
  Probed probed;
  const auto& plans = parts.plans();
  const auto& models = parts.models();
  probed.sms.assign(plans.size(), std::vector<std::vector<int>>(models.size()));
  for (std::size_t p = 0; p < plans.size() && probed.failure.empty(); ++p) {
    for (std::size_t m = 0; m < models.size() && probed.failure.empty(); ++m) {
      auto part = parts.partition(plans[p], models[m]);
      if (!part.ok()) {
        probed.failure = part.error().message();
        break;
      }
      probed.where[(*part)->stream()] = {p, m};
      auto ids = ex::green::probe_sms((*part)->stream());
      if (!ids.ok()) {
        probed.failure = ids.status().message();
        break;
      }
      probed.sms[p][m] = *ids;
    }
  }
  return probed;
}

class PlanSetSwitchGpu : public PlanSetGpuFixture {};

// One call of a model on the stream stream() gives it, checked: the stream is a partition of that
// model, the result is right, and the kernels ran inside that plan's partition (the engine records
// %smid). Returns the plan's index, or sets `failure`.
std::size_t checked_call(const ex::PlanSetPartitions& parts, const Probed& probed, std::size_t m,
                         SessionUnderTest& s, AxpbyIo& io, std::string& failure) {
  auto stream = parts.stream(parts.models()[m]);
  if (!stream.ok()) {
    failure = "stream(): " + stream.error().message();
    return 0;
  }
  const auto it = probed.where.find(*stream);
  if (it == probed.where.end() || it->second.second != m) {
    failure = "stream() gave a stream of no partition of this model";
    return 0;
  }
  const std::size_t p = it->second.first;
  const ex::Status st = run_and_sync(*s.session, io, *stream);
  if (!st.ok()) failure = "call: " + st.message();
  if (failure.empty() && !io.out_matches()) failure = "wrong result";
  if (failure.empty()) {
    auto sms = s.cuda_engine()->recorded_sms();
    if (!sms.ok()) {
      failure = "recorded_sms: " + sms.error().message();
    } else if (!is_subset(*sms, probed.sms[p][m])) {
      failure = "a call ran outside plan '" + parts.plans()[p] + "''s partition";
    }
  }
  if (failure.empty() && !s.cuda_engine()->clear_recorded_sms().ok()) failure = "clear_recorded_sms failed";
  return p;
}

// The switch's cost under load: batch and others called continuously from two threads (each call
// checked), the latency model from a third, and 1000 switches alternating between the smallest and the
// largest plan, after 200 latency calls without a switch (the baseline). Per switch:
//  - switch_to: the host time of the call itself;
//  - the first call after it: the latency model's first call issued after switch_to returned (its
//    thread read the switch's sequence number, published after the return, before it called
//    stream()), from its issue until its work is done on the GPU (a CUDA event recorded on the
//    call's stream right after execute, polled until it completes). Its plan is the new one, and
//    what it waits for that a call without a switch does not is the move to the new plan's stream
//    (the wait on the model's last call on the old one). Against the same time of the baseline's
//    calls, it is what a switch costs the call that follows it;
//  - switch return to the first call's end: the above plus the latency thread finishing the call it
//    was in when the switch came (and its checks): the time until the new plan has carried a call.
// Also the device memory of the four plans (cudaMemGetInfo before and after apply, after destroy).
TEST_F(PlanSetSwitchGpu, SwitchCostUnderLoadIsMeasuredAndEveryCallRunsOnItsPlan) {
  std::vector<SessionUnderTest> sessions;
  std::vector<std::unique_ptr<AxpbyIo>> ios;
  const char* specs[] = {"elementwise min=1x4 max=64x4096 spin_us=50 record_sms=1",
                         "elementwise min=1x4 max=64x4096 kernels=4 record_sms=1",
                         "elementwise min=1x4 max=64x4096 kernels=4 record_sms=1"};
  for (const char* spec : specs) {
    sessions.push_back(make_session(spec));
    ASSERT_TRUE(sessions.back().session);
    ASSERT_NE(sessions.back().cuda_engine(), nullptr);
    ios.push_back(std::make_unique<AxpbyIo>(Memory::kDevice, Memory::kDevice, Shape{64, 4096}));
  }
  cudaEvent_t finished = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&finished, cudaEventDisableTiming), cudaSuccess);
  constexpr int kBaselineCalls = 200;

  constexpr int kSwitches = 1000;
  // Per latency call: the last switch it saw, its plan, when it was issued (before execute) and when
  // the event recorded after it was seen reached (its work done).
  struct Sample {
    int seq;
    std::size_t plan;
    Clock::time_point issued;
    Clock::time_point done;
  };
  std::vector<Sample> samples;
  std::vector<double> switch_us(kSwitches + 1, 0);
  std::vector<Clock::time_point> returned(kSwitches + 1);
  std::vector<std::size_t> target(kSwitches + 1, 0);
  std::string switch_failure;
  std::vector<std::string> failures(3);
  std::vector<int> load_calls(3, 0);
  const std::size_t before = free_bytes();
  std::size_t made = 0, held = 0;
  {
    auto parts = ex::apply_plan_set(set_, 0);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    made = free_bytes();
    ASSERT_EQ(parts->models(), (std::vector<std::string>{"latency", "batch", "others"}));
    const Probed probed = probe_all(*parts);
    ASSERT_TRUE(probed.failure.empty()) << probed.failure;
    const std::size_t small = 0, large = parts->plans().size() - 1;

    std::atomic<bool> done{false};
    std::atomic<int> seq{0};     // the last switch whose switch_to returned
    std::atomic<int> served{0};  // the last switch a latency call has started after
    std::atomic<int> latency_calls{0};
    std::atomic<bool> latency_stopped{false};  // its thread has left its loop (a failure, or done)
    std::vector<std::thread> threads;
    for (std::size_t m = 1; m < 3; ++m) {
      threads.emplace_back([&, m] {
        while (!done.load() && failures[m].empty()) {
          (void)checked_call(*parts, probed, m, sessions[m], *ios[m], failures[m]);
          if (failures[m].empty()) ++load_calls[m];
        }
      });
    }
    threads.emplace_back([&] {
      std::string& failure = failures[0];
      SessionUnderTest& s = sessions[0];
      AxpbyIo& io = *ios[0];
      while (!done.load() && failure.empty()) {
        io.refresh();  // before the sequence is read: not part of the measured time
        const int k = seq.load(std::memory_order_acquire);
        auto stream = parts->stream("latency");
        if (!stream.ok()) {
          failure = "stream(): " + stream.error().message();
          break;
        }
        const auto it = probed.where.find(*stream);
        if (it == probed.where.end() || it->second.second != 0) {
          failure = "stream() gave a stream of no partition of the latency model";
          break;
        }
        const Clock::time_point issued = Clock::now();
        const ex::Status st = execute_on(*stream, *s.session, io.args());
        if (!st.ok()) {
          failure = "call: " + st.message();
          break;
        }
        if (cudaEventRecord(finished, *stream) != cudaSuccess) {
          failure = "cudaEventRecord failed";
          break;
        }
        cudaError_t e = cudaErrorNotReady;
        while ((e = cudaEventQuery(finished)) == cudaErrorNotReady) {
        }
        const Clock::time_point at = Clock::now();
        if (e != cudaSuccess || cudaStreamSynchronize(*stream) != cudaSuccess) {
          failure = "the call's event or stream failed";
          break;
        }
        const std::size_t p = it->second.first;
        if (!io.out_matches()) failure = "wrong result";
        auto sms = s.cuda_engine()->recorded_sms();
        if (failure.empty() && (!sms.ok() || !is_subset(*sms, probed.sms[p][0]))) {
          failure = "a call ran outside plan '" + parts->plans()[p] + "''s partition";
        }
        if (failure.empty() && !s.cuda_engine()->clear_recorded_sms().ok()) failure = "clear_recorded_sms failed";
        samples.push_back({k, p, issued, at});
        served.store(k, std::memory_order_release);
        latency_calls.fetch_add(1, std::memory_order_release);
      }
      latency_stopped.store(true);
    });
    const Clock::time_point baseline_deadline = Clock::now() + std::chrono::seconds(30);
    while (latency_calls.load(std::memory_order_acquire) < kBaselineCalls && !latency_stopped.load() &&
           Clock::now() < baseline_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int k = 1; k <= kSwitches && switch_failure.empty(); ++k) {
      target[k] = (k % 2 == 1) ? large : small;
      const Clock::time_point t0 = Clock::now();
      const ex::Status st = parts->switch_to(parts->plans()[target[k]]);
      const Clock::time_point t1 = Clock::now();
      if (!st.ok()) {
        switch_failure = st.message();
        break;
      }
      switch_us[k] = std::chrono::duration<double, std::micro>(t1 - t0).count();
      returned[k] = t1;
      seq.store(k, std::memory_order_release);
      const Clock::time_point deadline = t1 + std::chrono::seconds(5);
      while (served.load(std::memory_order_acquire) < k && !latency_stopped.load()) {
        if (Clock::now() > deadline) {
          switch_failure = "no latency call in 5 s after switch " + std::to_string(k);
          break;
        }
        std::this_thread::yield();
      }
      if (latency_stopped.load()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    done.store(true);
    for (std::thread& t : threads) t.join();
    held = free_bytes();
  }
  const std::size_t after = free_bytes();
  EXPECT_EQ(cudaEventDestroy(finished), cudaSuccess);
  EXPECT_TRUE(switch_failure.empty()) << switch_failure;
  const char* names[] = {"latency", "batch", "others"};
  for (std::size_t m = 0; m < 3; ++m) EXPECT_TRUE(failures[m].empty()) << names[m] << ": " << failures[m];

  // Per switch, the first latency call issued after it: on the plan switched to, issued after the
  // switch returned. Its issue-to-done time against the baseline's (the calls before any switch), and
  // the time from the switch's return to its end.
  std::vector<double> first_us, first_call_us, baseline_us, switches_us;
  std::vector<bool> seen(kSwitches + 1, false);
  auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  for (const Sample& sample : samples) {
    if (sample.seq == 0) baseline_us.push_back(us(sample.done - sample.issued));
    if (sample.seq < 1 || sample.seq > kSwitches || seen[sample.seq]) continue;
    seen[sample.seq] = true;
    EXPECT_EQ(sample.plan, target[sample.seq]) << "the first call after switch " << sample.seq << " ran on another plan";
    EXPECT_GE(sample.issued, returned[sample.seq]) << "switch " << sample.seq;
    first_us.push_back(us(sample.done - returned[sample.seq]));
    first_call_us.push_back(us(sample.done - sample.issued));
  }
  EXPECT_GE(baseline_us.size(), static_cast<std::size_t>(kBaselineCalls)) << "latency calls before the first switch";
  for (int k = 1; k <= kSwitches; ++k) {
    if (seen[k]) switches_us.push_back(switch_us[k]);
  }
  EXPECT_EQ(first_us.size(), static_cast<std::size_t>(kSwitches)) << "switches without a first call measured";
  EXPECT_GT(load_calls[1], 0);
  EXPECT_GT(load_calls[2], 0);
  std::printf("plan_set.switch_cost gpu='%s' switches=%zu switch_to_us_p50=%.3f switch_to_us_p99=%.3f "
              "first_call_after_switch_us_p50=%.1f first_call_after_switch_us_p99=%.1f "
              "call_without_switch_us_p50=%.1f call_without_switch_us_p99=%.1f baseline_calls=%zu "
              "switch_return_to_first_call_done_us_p50=%.1f switch_return_to_first_call_done_us_p99=%.1f load_calls=%d "
              "plans=%zu set_mib=%.1f per_plan_mib=%.1f given_back_mib=%.1f\n",
              gpu_.name.c_str(), first_us.size(), percentile(switches_us, 0.5), percentile(switches_us, 0.99),
              percentile(first_call_us, 0.5), percentile(first_call_us, 0.99), percentile(baseline_us, 0.5),
              percentile(baseline_us, 0.99), baseline_us.size(), percentile(first_us, 0.5),
              percentile(first_us, 0.99), load_calls[1] + load_calls[2], set_.plans.size(),
              mib(static_cast<double>(before) - static_cast<double>(made)),
              mib((static_cast<double>(before) - static_cast<double>(made)) / static_cast<double>(set_.plans.size())),
              mib(static_cast<double>(after) - static_cast<double>(held)));
  EXPECT_GE(after, held);
}

// A caller's graph captured on plan A's stream, then a switch to plan B: eager calls on B's stream run
// on B's partition; the graph replayed on A's stream still runs inside A's partition (a graph's kernels
// keep the green context of the stream they were captured on). The delegate's own graphs
// (use_cuda_graphs) are keyed by the green context of the call's stream (session/graph_cache.h,
// GraphKey::green): after a switch the model's calls get a graph of their own on the new partition
// (one more capture), and switching back replays the first plan's graph, still cached (no capture).
TEST_F(PlanSetSwitchGpu, CapturesAcrossASwitchKeepTheirPartition) {
  auto parts = ex::apply_plan_set(set_, 0);
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  const Probed probed = probe_all(*parts);
  ASSERT_TRUE(probed.failure.empty()) << probed.failure;
  const std::size_t a = 0, b = parts->plans().size() - 1;
  const std::string& plan_a = parts->plans()[a];
  const std::string& plan_b = parts->plans()[b];
  const std::vector<int>& sms_a = probed.sms[a][0];
  const std::vector<int>& sms_b = probed.sms[b][0];
  auto stream_a = parts->stream("latency");
  ASSERT_TRUE(stream_a.ok()) << stream_a.error().message();
  ASSERT_EQ(parts->current(), plan_a);

  // The caller's capture.
  auto s = make_session("elementwise min=1x4 max=64x4096 kernels=2 record_sms=1");
  ASSERT_TRUE(s.session);
  CudaTestEngine* engine = s.cuda_engine();
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 4096});
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, *stream_a));
  ASSERT_TRUE(io.out_matches());
  const CapturedCall call = capture_call(*stream_a, *s.session, io.args());
  ASSERT_EQ(call.ended, cudaSuccess) << cudaGetErrorString(call.ended);
  TRTET_ASSERT_OK(call.status);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, call.graph, 0), cudaSuccess);

  TRTET_ASSERT_OK(parts->switch_to(plan_b));
  auto stream_b = parts->stream("latency");
  ASSERT_TRUE(stream_b.ok()) << stream_b.error().message();
  ASSERT_NE(*stream_b, *stream_a);
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  for (int c = 0; c < 3; ++c) {
    TRTET_ASSERT_OK(run_and_sync(*s.session, io, *stream_b));
    ASSERT_TRUE(io.out_matches()) << "eager call " << c << " on plan " << plan_b;
  }
  auto eager = engine->recorded_sms();
  TRTET_ASSERT_OK(eager);
  EXPECT_TRUE(is_subset(*eager, sms_b)) << "an eager call ran outside plan '" << plan_b << "''s partition";
  EXPECT_FALSE(is_subset(*eager, sms_a)) << "the eager calls after the switch ran only on plan '" << plan_a
                                         << "''s SMs (" << sms_a.size() << " of them; " << plan_b << " has "
                                         << sms_b.size() << ")";
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_TRUE(replay_and_check(exec, *stream_a, io)) << "replay " << replay << " after the switch";
  }
  auto replayed = engine->recorded_sms();
  TRTET_ASSERT_OK(replayed);
  EXPECT_FALSE(replayed->empty()) << "the replays recorded no SM";
  EXPECT_TRUE(is_subset(*replayed, sms_a)) << "a replay ran outside plan '" << plan_a << "''s partition";
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(call.graph), cudaSuccess);

  // The delegate's graphs: one per partition, each kept across switches.
  TRTET_ASSERT_OK(parts->switch_to(plan_a));
  auto g = make_session("elementwise min=1x4 max=64x4096 kernels=2 record_sms=1", graphs_on());
  ASSERT_TRUE(g.session);
  AxpbyIo gio(Memory::kDevice, Memory::kDevice, Shape{64, 4096});
  struct Step {
    const std::string* plan;
    std::size_t index;
    std::uint64_t captures, launches;
  };
  // Per plan three calls: eager, captured (and launched), replayed; back on A, all three replays.
  const Step steps[] = {{&plan_a, a, 1, 2}, {&plan_b, b, 2, 4}, {&plan_a, a, 2, 7}};
  for (const Step& step : steps) {
    TRTET_ASSERT_OK(parts->switch_to(*step.plan));
    auto stream = parts->stream("latency");
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    TRTET_ASSERT_OK(g.cuda_engine()->clear_recorded_sms());
    for (int c = 0; c < 3; ++c) {
      TRTET_ASSERT_OK(run_and_sync(*g.session, gio, *stream));
      ASSERT_TRUE(gio.out_matches()) << "call " << c << " on plan " << *step.plan;
    }
    auto sms = g.cuda_engine()->recorded_sms();
    TRTET_ASSERT_OK(sms);
    EXPECT_TRUE(is_subset(*sms, probed.sms[step.index][0])) << "a call ran outside plan '" << *step.plan << "'";
    EXPECT_EQ(g.session->stats().graph_captures, step.captures) << "on plan " << *step.plan;
    EXPECT_EQ(g.session->stats().graph_launches, step.launches) << "on plan " << *step.plan;
  }
}

// Three models called from three threads (each call waited for and checked) while a fourth switches
// every millisecond; then the callers stop, each leaving one 20 ms call queued and not waited for, the
// switcher stops, and the set is destroyed at once: the queued calls are waited for (right results,
// inside the partition of the plan each got), nothing crashes, the memory comes back.
TEST_F(PlanSetSwitchGpu, DestroyedRightAfterSwitchesWithTheLastCallsStillRunning) {
  std::vector<SessionUnderTest> sessions;
  std::vector<std::unique_ptr<AxpbyIo>> ios;
  for (int m = 0; m < 3; ++m) {
    sessions.push_back(make_session("elementwise min=1x4 max=64x4096 spin_us=20000 record_sms=1"));
    ASSERT_TRUE(sessions.back().session);
    ASSERT_NE(sessions.back().cuda_engine(), nullptr);
    ios.push_back(std::make_unique<AxpbyIo>(Memory::kDevice, Memory::kDevice, Shape{64, 4096}));
  }
  std::vector<std::string> failures(3);
  std::vector<std::size_t> last_plan(3, 0);
  std::vector<cudaStream_t> last_stream(3, nullptr);
  std::vector<std::vector<int>> last_sms(3);
  std::string switch_failure;
  int switches = 0;
  int still_running = 0;
  std::size_t held = 0;
  {
    auto parts = ex::apply_plan_set(set_, 0);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    const Probed probed = probe_all(*parts);
    ASSERT_TRUE(probed.failure.empty()) << probed.failure;
    std::atomic<bool> stop_callers{false}, stop_switcher{false};
    std::thread switcher([&] {
      for (std::size_t next = 1; !stop_switcher.load(); ++next) {
        const ex::Status st = parts->switch_to(parts->plans()[next % parts->plans().size()]);
        if (!st.ok()) {
          switch_failure = st.message();
          return;
        }
        ++switches;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    std::vector<std::thread> callers;
    for (std::size_t m = 0; m < 3; ++m) {
      callers.emplace_back([&, m] {
        while (!stop_callers.load() && failures[m].empty()) {
          (void)checked_call(*parts, probed, m, sessions[m], *ios[m], failures[m]);
        }
        if (!failures[m].empty()) return;
        // The last call: fresh inputs, queued and not waited for.
        auto stream = parts->stream(parts->models()[m]);
        if (!stream.ok()) {
          failures[m] = "stream(): " + stream.error().message();
          return;
        }
        const auto it = probed.where.find(*stream);
        if (it == probed.where.end()) {
          failures[m] = "stream() gave a stream of no partition";
          return;
        }
        last_plan[m] = it->second.first;
        last_stream[m] = *stream;
        last_sms[m] = probed.sms[it->second.first][m];
        ios[m]->refresh();
        const ex::Status st = execute_on(*stream, *sessions[m].session, ios[m]->args());
        if (!st.ok()) failures[m] = "last call: " + st.message();
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop_callers.store(true);
    for (std::thread& t : callers) t.join();
    stop_switcher.store(true);
    switcher.join();
    for (std::size_t m = 0; m < 3; ++m) {
      if (last_stream[m] != nullptr && cudaStreamQuery(last_stream[m]) == cudaErrorNotReady) ++still_running;
    }
    held = free_bytes();
  }  // destroyed: the queued calls are waited for, then the streams and the green contexts go
  const std::size_t after = free_bytes();
  EXPECT_TRUE(switch_failure.empty()) << switch_failure;
  std::printf("destroyed after %d switches with %d of 3 last calls still running: %.1f MiB given back\n", switches,
              still_running, mib(static_cast<double>(after) - static_cast<double>(held)));
  EXPECT_GT(switches, 0);
  EXPECT_GE(still_running, 1) << "every last call had ended before the set was destroyed";
  for (std::size_t m = 0; m < 3; ++m) {
    ASSERT_TRUE(failures[m].empty()) << "model " << m << ": " << failures[m];
    EXPECT_TRUE(ios[m]->out_matches()) << "model " << m << ": the last call did not finish before destruction";
    auto sms = sessions[m].cuda_engine()->recorded_sms();
    TRTET_ASSERT_OK(sms);
    EXPECT_TRUE(is_subset(*sms, last_sms[m])) << "model " << m << ": the last call ran outside plan " << last_plan[m];
  }
  EXPECT_GE(after, held);
}

// A set made on another GPU (another kind, or one of this name with another SM count) is refused
// naming both GPUs, before anything is split: the device's free memory is what it was (less than half a
// split's few MiB, for whatever else the device does meanwhile).
TEST_F(PlanSetSwitchGpu, ASetOfAnotherGpuIsRefusedAndNothingIsSplit) {
  ex::PlanSet other = set_;
  other.gpu.name = "NVIDIA A100-SXM4-80GB";
  const std::string made_on = "it was made on 'NVIDIA A100-SXM4-80GB'";
  const std::string here = "but this GPU is '" + gpu_.name + "'";
  const std::string first = "plan '" + set_.plans[0].name + "'";
  const std::size_t before = free_bytes();
  TRTET_EXPECT_ERROR(ex::apply_plan_set(other, 0), ex::ErrorCode::kInvalidArgument, first, made_on, here,
                     "make a plan on this GPU");
  EXPECT_LT(taken_since(before), kOneSplit) << "a refused set took memory";

  ex::PlanSet more = set_;
  more.gpu.sm_count += gpu_.granularity;
  const std::string more_made = "it was made on '" + gpu_.name + "' (" + std::to_string(more.gpu.sm_count) + " SMs";
  const std::string more_here = "but this GPU is '" + gpu_.name + "' (" + std::to_string(gpu_.sm_count) + " SMs";
  TRTET_EXPECT_ERROR(ex::apply_plan_set(more, 0), ex::ErrorCode::kInvalidArgument, more_made, more_here);
  EXPECT_LT(taken_since(before), kOneSplit) << "a refused set took memory";
  auto good = ex::apply_plan_set(set_, 0);  // this GPU's set is made
  EXPECT_TRUE(good.ok()) << good.error().message();
}

}  // namespace
}  // namespace trtet_test
