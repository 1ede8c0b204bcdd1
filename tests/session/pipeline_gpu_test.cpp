// Pipelined calls (Note [pipelined calls] in src/session/call_ordering.cpp): several threads, each on a
// stream of its own, call one session with host memory. Every call's outputs are checked against
// its own inputs (fresh per call); the in-place engine proves engines never overlap; destroy and a
// capture in the middle of pipelined calls stay safe; and, measured on the GPU by events around
// each engine run, the copies of neighbouring calls really run under the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/test_engine_factory.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

constexpr int kThreads = 3;

/// Runs body(t) for t in [0, threads) on that many threads, released together, and joins them.
template <typename Body>
void on_threads(int threads, Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  }
  go.store(true);
  for (std::thread& thread : pool) thread.join();
}

std::uint64_t call_seed(int thread, int call) {
  return (static_cast<std::uint64_t>(fresh_seed()) << 32) ^ (static_cast<std::uint64_t>(thread) << 20) ^
         static_cast<std::uint64_t>(call);
}

/// Overwrites the host inputs of `io` (the call returned: the contract says it is done with them).
void scribble_host_inputs(AxpbyIo& io) {
  const std::vector<float> garbage(io.xv.size(), 1e30f);
  if (io.x->memory() != Memory::kDevice) io.x->write(garbage);
  if (io.y->memory() != Memory::kDevice) io.y->write(garbage);
}

/// One call of `io` on `stream` checked as the contract allows: host outputs right at return (host
/// inputs are then overwritten), device outputs after synchronizing the stream.
::testing::AssertionResult call_and_check(Session& session, AxpbyIo& io, cudaStream_t stream, std::uint64_t seed) {
  io.refresh(seed);
  const ex::Status status = execute_on(stream, session, io.args());
  if (!status.ok()) return ::testing::AssertionFailure() << "execute: " << status.to_string();
  const bool host_output = is_host(io.out->memory());
  if (host_output) {
    ::testing::AssertionResult right = io.out_matches();
    if (!right) return right << " (a host output, checked right at return)";
  }
  if (is_host(io.x->memory()) || is_host(io.y->memory())) scribble_host_inputs(io);
  if (!host_output) {
    if (cudaStreamSynchronize(stream) != cudaSuccess) return ::testing::AssertionFailure() << "cudaStreamSynchronize";
    ::testing::AssertionResult right = io.out_matches();
    if (!right) return right << " (a device output, checked after synchronizing the stream; host inputs were overwritten at return)";
  }
  return ::testing::AssertionSuccess();
}

class PipelineGpu : public StreamsGpuTest<kThreads> {
 protected:
  /// One call of `n` elements with pinned I/O on each stream in turn (a call on another stream than
  /// the last takes the next slot): the default's three staging slots sized, so later calls of up
  /// to `n` never grow staging (which makes a call wait for every earlier one).
  void size_every_slot(Session& session, std::int64_t n) {
    static_assert(kThreads == 3, "one stream per staging slot of the default");
    AxpbyIo warm(Memory::kPinned, Memory::kPinned, Shape{n});
    for (int i = 0; i < kThreads; ++i) ASSERT_TRUE(call_and_check(session, warm, streams_[i], call_seed(99, i)));
  }
};

// Three threads, each on its own stream, 40 calls each with pinned inputs and output of 1 MiB and
// more (two sizes in turn): every call returns with its own outputs, no call waited under the
// session's lock, and none waited for the whole of every earlier call.
TEST_F(PipelineGpu, ThreadsOnTheirOwnStreamsWithPinnedIoGetTheirOwnOutputs) {
  constexpr std::int64_t kLarge = 327680, kSmall = 266240;  // 1.25 MiB and 1.02 MiB per tensor
  constexpr int kCalls = 40;
  auto s = make_session("elementwise min=1 max=1048576 spin_us=300");
  ASSERT_TRUE(s.session);
  size_every_slot(*s.session, kLarge);
  std::vector<std::unique_ptr<AxpbyIo>> large, small;
  for (int t = 0; t < kThreads; ++t) {
    large.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kPinned, Shape{kLarge}));
    small.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kPinned, Shape{kSmall}));
  }
  const auto before = s.session->stats();
  on_threads(kThreads, [&](int t) {
    for (int call = 0; call < kCalls; ++call) {
      AxpbyIo& io = call % 2 == 0 ? *large[t] : *small[t];
      ASSERT_TRUE(call_and_check(*s.session, io, streams_[t], call_seed(t, call))) << "thread " << t << ", call " << call;
    }
  });
  const auto after = s.session->stats();
  EXPECT_EQ(after.calls - before.calls, std::uint64_t{kThreads * kCalls});
  EXPECT_EQ(after.unlocked_waits - before.unlocked_waits, std::uint64_t{kThreads * kCalls})
      << "calls with pinned host outputs waited for them under the session's lock";
  EXPECT_EQ(after.whole_call_waits, before.whole_call_waits)
      << "a call waited for the whole of every earlier call (nothing grew, nothing was captured)";
  EXPECT_GT(after.cross_stream_waits, before.cross_stream_waits);
}

// SessionOptions::time_the_lock: the session's lock, waited for and held, timed per call. Pinned
// outputs are waited for after the lock is released, so with a 300 us engine the hold (queuing the
// call) stays far below the engine's time, and the three threads' calls wait for one another's
// holds. Off (the default), no clock is read: both stay 0.
TEST_F(PipelineGpu, TheLockIsTimedOnlyWhenAskedAndItsHoldLeavesOutTheWait) {
  constexpr std::int64_t kN = 266240;
  constexpr int kCalls = 20;
  ex::delegate::SessionOptions timed;
  timed.time_the_lock = true;
  for (const bool on : {false, true}) {
    auto s = make_session("elementwise min=1 max=1048576 spin_us=300", on ? timed : ex::delegate::SessionOptions{});
    ASSERT_TRUE(s.session);
    size_every_slot(*s.session, kN);
    std::vector<std::unique_ptr<AxpbyIo>> ios;
    for (int t = 0; t < kThreads; ++t) ios.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kPinned, Shape{kN}));
    const auto before = s.session->stats();
    on_threads(kThreads, [&](int t) {
      for (int call = 0; call < kCalls; ++call) {
        ASSERT_TRUE(call_and_check(*s.session, *ios[t], streams_[t], call_seed(t, call))) << "thread " << t;
      }
    });
    const auto after = s.session->stats();
    const double calls = kThreads * kCalls;
    const double held_us = static_cast<double>(after.lock_held_ns - before.lock_held_ns) / 1e3 / calls;
    const double waited_us = static_cast<double>(after.lock_wait_ns - before.lock_wait_ns) / 1e3 / calls;
    if (!on) {
      EXPECT_EQ(after.lock_held_ns, 0u);
      EXPECT_EQ(after.lock_wait_ns, 0u);
      continue;
    }
    std::printf("lock: held %.2f us, waited %.2f us per call (3 threads, pinned I/O, 300 us engine)\n", held_us, waited_us);
    EXPECT_GT(held_us, 0.0);
    EXPECT_LT(held_us, 150.0) << "the hold took in the wait for the outputs (300 us of engine a call)";
    EXPECT_GE(waited_us, 0.0);
  }
}

// The same with every mix of pinned, pageable and device memory, per thread and call: calls that
// wait under the lock (pageable), calls that return once their inputs are consumed (host inputs,
// device output: inputs overwritten at once, outputs checked after a synchronize), calls that
// stage nothing, all interleaved across the threads' streams.
TEST_F(PipelineGpu, ThreadsWithPageableAndMixedMemoryGetTheirOwnOutputs) {
  constexpr std::int64_t kN = 300000;  // 1.14 MiB per tensor
  constexpr int kCalls = 28;
  const std::pair<Memory, Memory> kinds[] = {
      {Memory::kPinned, Memory::kPinned},   {Memory::kPageable, Memory::kPageable}, {Memory::kPinned, Memory::kPageable},
      {Memory::kPageable, Memory::kPinned}, {Memory::kPinned, Memory::kDevice},     {Memory::kDevice, Memory::kPinned},
      {Memory::kPageable, Memory::kDevice}, {Memory::kDevice, Memory::kDevice}};
  constexpr int kKinds = 8;
  auto s = make_session("elementwise min=1 max=1048576 spin_us=300");
  ASSERT_TRUE(s.session);
  std::vector<std::vector<std::unique_ptr<AxpbyIo>>> ios(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (const auto& [in, out] : kinds) ios[t].push_back(std::make_unique<AxpbyIo>(in, out, Shape{kN}));
  }
  on_threads(kThreads, [&](int t) {
    for (int call = 0; call < kCalls; ++call) {
      const int kind = (call + 3 * t) % kKinds;
      AxpbyIo& io = *ios[t][kind];
      ASSERT_TRUE(call_and_check(*s.session, io, streams_[t], call_seed(t, call)))
          << "thread " << t << ", call " << call << ": " << to_string(io.x->memory()) << " inputs, "
          << to_string(io.out->memory()) << " output";
    }
  });
  EXPECT_EQ(s.session->stats().calls, std::uint64_t{kThreads * kCalls});
}

// One thread, three streams in turn: pinned I/O, device I/O and pinned-in/device-out calls
// interleaved, so slots, the engine order and the joins of completion all change hands between
// streams on every call.
TEST_F(PipelineGpu, AlternatingStreamsFromOneThreadStayRight) {
  constexpr std::int64_t kN = 300000;
  auto s = make_session("elementwise min=1 max=1048576 spin_us=500");
  ASSERT_TRUE(s.session);
  AxpbyIo pinned(Memory::kPinned, Memory::kPinned, Shape{kN});
  AxpbyIo device(Memory::kDevice, Memory::kDevice, Shape{kN});
  AxpbyIo in_only(Memory::kPinned, Memory::kDevice, Shape{kN});
  AxpbyIo* order[] = {&pinned, &pinned, &device, &in_only, &pinned, &in_only, &device};
  constexpr int kCalls = 60;
  for (int call = 0; call < kCalls; ++call) {
    AxpbyIo& io = *order[call % 7];
    ASSERT_TRUE(call_and_check(*s.session, io, streams_[call % kThreads], call_seed(0, call))) << "call " << call;
  }
  EXPECT_EQ(s.session->stats().cross_stream_waits, std::uint64_t{kCalls - 1});
}

// The in-place engine (cache += x, the cache on the device, x pinned and different per call) from
// three threads on their own streams: the cache ends up holding every update only if no engine
// run overlapped another. Inputs are integers, so the sum is exact in any order. Each call
// returns once its x is consumed, and the thread writes its next x at once.
TEST_F(PipelineGpu, InPlaceUpdatesFromThreadsOnTheirOwnStreamsAreNeverLost) {
  constexpr std::int64_t kN = 300000;
  constexpr int kCalls = 30;
  auto s = make_session("aliasing min=1 max=1048576 spin_us=300");
  ASSERT_TRUE(s.session);
  OwnedTensor cache(Memory::kDevice, Shape{kN});
  std::vector<float> expected(kN);
  for (std::int64_t i = 0; i < kN; ++i) expected[i] = static_cast<float>(i % 1000);
  cache.write(expected);
  std::vector<std::unique_ptr<OwnedTensor>> xs, outs;
  std::vector<std::vector<float>> sums(kThreads, std::vector<float>(kN, 0.0f));
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(std::make_unique<OwnedTensor>(Memory::kPinned, Shape{kN}));
    outs.push_back(std::make_unique<OwnedTensor>(Memory::kDevice, Shape{kN}));
  }
  on_threads(kThreads, [&](int t) {
    std::vector<float> x(kN);
    for (int call = 0; call < kCalls; ++call) {
      for (std::int64_t i = 0; i < kN; ++i) {
        x[i] = static_cast<float>(static_cast<int>((i * 7 + call * 13 + t * 29) % 9) - 4);
        sums[t][i] += x[i];
      }
      xs[t]->write(x);
      TensorView args[3] = {cache.view(), xs[t]->view(), outs[t]->view()};
      const ex::Status status = execute_on(streams_[t], *s.session, args);
      ASSERT_TRUE(status.ok()) << "thread " << t << ", call " << call << ": " << status.to_string();
    }
  });
  for (auto& stream : streams_) ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (int t = 0; t < kThreads; ++t) {
    for (std::int64_t i = 0; i < kN; ++i) expected[i] += sums[t][i];
  }
  const std::vector<float> result = cache.read();
  for (std::int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], expected[i]) << "element " << i << ": an in-place update was lost (two engine runs overlapped)";
  }
}

// destroy() while three threads loop on calls (pinned, pinned-in/device-out, pageable-in/pinned-out):
// every call that succeeded has its own outputs (those that were waiting outside the lock when
// destroy ran too), every thread then sees kInvalidState, and nothing crashes.
TEST_F(PipelineGpu, DestroyWhileThreadsAreMidCall) {
  constexpr std::int64_t kN = 300000;
  auto s = make_session("elementwise min=1 max=1048576 spin_us=500");
  ASSERT_TRUE(s.session);
  std::vector<std::unique_ptr<AxpbyIo>> ios;
  ios.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kPinned, Shape{kN}));
  ios.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kDevice, Shape{kN}));
  ios.push_back(std::make_unique<AxpbyIo>(Memory::kPageable, Memory::kPinned, Shape{kN}));
  std::atomic<int> calls_made[kThreads] = {};
  std::atomic<int> finished{0};
  ex::Status last[kThreads];
  // Destroys once every thread has made a few calls (or stopped early, failing).
  std::thread destroyer([&] {
    for (int t = 0; t < kThreads; ++t) {
      while (calls_made[t].load() < 3 && finished.load() == 0) std::this_thread::yield();
    }
    s.session->destroy();
  });
  on_threads(kThreads, [&](int t) {
    AxpbyIo& io = *ios[t];
    auto loop = [&] {
      for (int call = 0; call < 100000; ++call) {
        io.refresh(call_seed(t, call));
        last[t] = execute_on(streams_[t], *s.session, io.args());
        if (!last[t].ok()) return;
        if (io.out->memory() == Memory::kDevice) {
          scribble_host_inputs(io);
          ASSERT_EQ(cudaStreamSynchronize(streams_[t]), cudaSuccess);
        }
        ASSERT_TRUE(io.out_matches()) << "thread " << t << ", call " << call;
        calls_made[t].fetch_add(1);
      }
    };
    loop();
    finished.fetch_add(1);
  });
  destroyer.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_GE(calls_made[t].load(), 3) << "thread " << t;
    EXPECT_EQ(last[t].code(), ex::ErrorCode::kInvalidState) << "thread " << t << ": " << last[t].to_string();
  }
  TensorView args[3];
  EXPECT_EQ(s.session->execute(args, 3).code(), ex::ErrorCode::kInvalidState);
}

// Pipelined calls, then the caller captures a call with pinned I/O (its graph copies through a
// staging slot) and replays it; then pipelined calls again, each now ordered after the whole of
// every earlier call (a replay may be in flight); then more replays, on another stream, and an
// eager call: every result right.
TEST_F(PipelineGpu, CaptureAfterPipelinedCallsAndEagerCallsAfterItsReplays) {
  constexpr std::int64_t kN = 300000;
  constexpr int kCalls = 12;
  auto s = make_session("elementwise min=1 max=1048576 spin_us=300");
  ASSERT_TRUE(s.session);
  size_every_slot(*s.session, kN);
  std::vector<std::unique_ptr<AxpbyIo>> ios;
  for (int t = 0; t < kThreads; ++t) ios.push_back(std::make_unique<AxpbyIo>(Memory::kPinned, Memory::kPinned, Shape{kN}));
  auto pipelined = [&](int round) {
    on_threads(kThreads, [&](int t) {
      for (int call = 0; call < kCalls; ++call) {
        ASSERT_TRUE(call_and_check(*s.session, *ios[t], streams_[t], call_seed(t, round * 100 + call)))
            << "round " << round << ", thread " << t << ", call " << call;
      }
    });
  };
  pipelined(0);
  EXPECT_EQ(s.session->stats().whole_call_waits, 0u);

  AxpbyIo captured(Memory::kPinned, Memory::kPinned, Shape{kN});
  captured.refresh(1);
  const CapturedCall call = capture_call(streams_[0], *s.session, captured.args());
  ASSERT_EQ(call.ended, cudaSuccess);
  TRTET_ASSERT_OK(call.status);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, call.graph, 0), cudaSuccess);
  auto replay = [&](cudaStream_t stream, std::uint64_t seed) {
    ASSERT_TRUE(replay_and_check(exec, stream, captured, seed)) << "replay with seed " << seed;  // same buffers, new data
  };
  for (int r = 0; r < 3; ++r) replay(streams_[0], call_seed(7, r));

  const auto before = s.session->stats();
  pipelined(1);
  EXPECT_EQ(s.session->stats().whole_call_waits - before.whole_call_waits, std::uint64_t{kThreads * kCalls})
      << "after a capture every eager call waits for the whole of every earlier call (a replay records only completion)";
  for (int r = 0; r < 3; ++r) replay(streams_[1], call_seed(8, r));
  AxpbyIo eager(Memory::kPinned, Memory::kPinned, Shape{kN});
  EXPECT_TRUE(call_and_check(*s.session, eager, streams_[2], call_seed(9, 0)));
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(call.graph), cudaSuccess);
}

/// A test engine wrapped so that every enqueue records timing events around the engine's work on
/// the call's stream: when each engine run started and ended on the GPU, in call order (enqueue
/// runs under the session's lock).
class TimedEngine final : public ex::engine::Engine {
 public:
  TimedEngine(ex::engine::EnginePtr inner, int runs) : inner_(std::move(inner)) {
    for (int i = 0; i < runs; ++i) {
      cudaEvent_t start = nullptr, end = nullptr;
      if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess) {
        ADD_FAILURE() << "cudaEventCreate";
        return;
      }
      starts_.push_back(start);
      ends_.push_back(end);
    }
  }
  ~TimedEngine() override {
    for (cudaEvent_t e : starts_) cudaEventDestroy(e);
    for (cudaEvent_t e : ends_) cudaEventDestroy(e);
  }
  TimedEngine(const TimedEngine&) = delete;             // owns events
  TimedEngine& operator=(const TimedEngine&) = delete;

  int io_count() const noexcept override { return inner_->io_count(); }
  const ex::engine::IoDesc& io(int index) const noexcept override { return inner_->io(index); }
  const std::vector<ex::engine::Alias>& aliases() const noexcept override { return inner_->aliases(); }
  int device() const noexcept override { return inner_->device(); }
  Status set_input_shape(int index, const Shape& shape) override { return inner_->set_input_shape(index, shape); }
  Result<int> infer_shapes() override { return inner_->infer_shapes(); }
  Result<Shape> output_shape(int index) const override { return inner_->output_shape(index); }
  Status set_tensor_address(int index, void* address) override { return inner_->set_tensor_address(index, address); }
  int profile_count() const noexcept override { return inner_->profile_count(); }
  ex::engine::ShapeBounds input_bounds(int profile, int index) const override {
    return inner_->input_bounds(profile, index);
  }
  Status select_profile(int profile, cudaStream_t stream) override { return inner_->select_profile(profile, stream); }
  int aux_stream_count() const noexcept override { return inner_->aux_stream_count(); }
  Status set_aux_streams(cudaStream_t* streams, int count) override { return inner_->set_aux_streams(streams, count); }
  bool enqueue_is_synchronous() const noexcept override { return inner_->enqueue_is_synchronous(); }
  Status enqueue(cudaStream_t stream) override {
    const std::size_t run = runs_++;
    if (run < starts_.size() && cudaEventRecord(starts_[run], stream) != cudaSuccess) ADD_FAILURE() << "record";
    const Status status = inner_->enqueue(stream);
    if (run < ends_.size() && cudaEventRecord(ends_[run], stream) != cudaSuccess) ADD_FAILURE() << "record";
    return status;
  }

  std::size_t runs() const { return std::min(runs_.load(), starts_.size()); }
  /// Milliseconds from the end of run `a` to the start of run `b` (negative: b started first).
  float end_to_start_ms(std::size_t a, std::size_t b) const { return elapsed(ends_[a], starts_[b]); }
  float duration_ms(std::size_t a) const { return elapsed(starts_[a], ends_[a]); }

 private:
  static float elapsed(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) ADD_FAILURE() << "cudaEventElapsedTime";
    return ms;
  }
  ex::engine::EnginePtr inner_;
  std::vector<cudaEvent_t> starts_, ends_;
  std::atomic<std::size_t> runs_{0};
};

/// GPU milliseconds of `copy` queued on `stream` (the least of three runs).
template <typename Copy>
float gpu_ms(cudaStream_t stream, Copy copy) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float best = 1e9f;
  for (int i = 0; i < 3; ++i) {
    cudaEventRecord(start, stream);
    copy();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

// The point of pipelining, measured on the GPU: three threads on their own streams, 16 MiB pinned
// x and y in and out back per call, an engine of 3 ms. Events around every engine run give the
// gap between one engine's end and the next one's start. Whole-call ordering puts the previous
// call's copy out and the next call's copies in into that gap (at least their time alone);
// pipelined, both ran under the engines and the gap is a small fraction of either copy alone: the
// next call's copies in started before the previous engine ended. No host timing is asserted.
TEST_F(PipelineGpu, CopiesOverlapTheNeighbouringCallsEngines) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  constexpr std::int64_t kN = 4 << 20;  // 16 MiB per tensor
  constexpr int kCalls = 8;             // per thread
  auto inner = make_test_engine("elementwise min=1 max=4194304 spin_us=3000", 0);
  TRTET_ASSERT_OK(inner);
  auto timed = std::make_unique<TimedEngine>(std::move(inner).value(), kThreads * kCalls + 8);
  TimedEngine* engine = timed.get();
  Session session(std::move(timed));
  TRTET_ASSERT_OK(session.initialize());

  struct Io {
    std::unique_ptr<OwnedTensor> x, y, out;
  };
  std::vector<Io> ios(kThreads);
  for (Io& io : ios) {
    io.x = std::make_unique<OwnedTensor>(Memory::kPinned, Shape{kN});
    io.y = std::make_unique<OwnedTensor>(Memory::kPinned, Shape{kN});
    io.out = std::make_unique<OwnedTensor>(Memory::kPinned, Shape{kN});
    ASSERT_TRUE(io.x->status().ok() && io.y->status().ok() && io.out->status().ok());
    std::vector<float> v(kN);
    for (std::int64_t i = 0; i < kN; ++i) v[i] = random_float_at(1, static_cast<std::size_t>(i));
    io.x->write(v);
    io.y->write(v);
  }
  // The copies alone: x and y in, out back.
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 2 * kN * sizeof(float)), cudaSuccess);
  const std::size_t bytes = kN * sizeof(float);
  const float h2d_ms = gpu_ms(streams_[0], [&] {
    cudaMemcpyAsync(scratch, ios[0].x->data(), bytes, cudaMemcpyHostToDevice, streams_[0]);
    cudaMemcpyAsync(static_cast<char*>(scratch) + bytes, ios[0].y->data(), bytes, cudaMemcpyHostToDevice, streams_[0]);
  });
  const float d2h_ms = gpu_ms(streams_[0], [&] {
    cudaMemcpyAsync(ios[0].out->data(), scratch, bytes, cudaMemcpyDeviceToHost, streams_[0]);
  });
  ASSERT_EQ(cudaFree(scratch), cudaSuccess);

  // Sampled elements change on every call (a full refill would take the host longer than the GPU).
  constexpr std::int64_t kStride = 4099;
  auto run = [&](int t, int call) -> ::testing::AssertionResult {
    Io& io = ios[t];
    auto* x = static_cast<float*>(io.x->data());
    auto* y = static_cast<float*>(io.y->data());
    auto* out = static_cast<float*>(io.out->data());
    const std::uint64_t seed = call_seed(t, call);
    for (std::int64_t i = 0; i < kN; i += kStride) {
      x[i] = random_float_at(seed, static_cast<std::size_t>(i));
      y[i] = random_float_at(~seed, static_cast<std::size_t>(i));
      out[i] = kPoison;
    }
    TensorView args[3] = {io.x->view(), io.y->view(), io.out->view()};
    const ex::Status status = execute_on(streams_[t], session, args);
    if (!status.ok()) return ::testing::AssertionFailure() << status.to_string();
    for (std::int64_t i = 0; i < kN; i += kStride) {
      const float want = 2.0f * x[i] - 0.5f * y[i];
      if (std::fabs(out[i] - want) > 1e-5f * (std::fabs(2.0f * x[i]) + std::fabs(0.5f * y[i])) + 1e-6f) {
        return ::testing::AssertionFailure() << "out[" << i << "] = " << out[i] << ", expected " << want;
      }
    }
    return ::testing::AssertionSuccess();
  };
  // Slot 0 sized; the other slots are made on their first use, which frees nothing and so waits
  // for nothing earlier.
  for (int call = 0; call < 2; ++call) ASSERT_TRUE(run(0, 100 + call));
  const std::size_t first = engine->runs();
  on_threads(kThreads, [&](int t) {
    for (int call = 0; call < kCalls; ++call) ASSERT_TRUE(run(t, call)) << "thread " << t << ", call " << call;
  });
  const std::size_t last = engine->runs();
  ASSERT_EQ(last - first, std::size_t{kThreads * kCalls});

  std::vector<float> gaps;
  std::ostringstream detail;
  for (std::size_t k = first; k + 1 < last; ++k) {
    EXPECT_GE(engine->duration_ms(k), 2.9f) << "engine run " << k << " was shorter than its 3 ms spin";
    gaps.push_back(engine->end_to_start_ms(k, k + 1));
    detail << " " << gaps.back();
  }
  std::vector<float> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  const float median = sorted[sorted.size() / 2];
  const float bound = 0.25f * std::min(h2d_ms, d2h_ms);
  EXPECT_LT(median, bound) << "median gap between one engine's end and the next one's start " << median
                           << " ms; the copies alone take " << h2d_ms << " ms in (x and y) and " << d2h_ms
                           << " ms out: they did not run under the neighbouring engines. Gaps (ms):" << detail.str();
  const auto stats = session.stats();
  EXPECT_EQ(stats.whole_call_waits, 0u);
  EXPECT_GT(stats.cross_stream_waits, 0u);
  session.destroy();
}

}  // namespace
}  // namespace trtet_test
