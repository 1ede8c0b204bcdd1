// A table of bad calls: each returns its error code and a message naming what is wrong, enqueues
// nothing (its stream idle right after the call, before any sync, though the engine runs 20 ms; the
// engine's counter; the poison of every output, the fixture's and the ones a case swaps in; every
// input and in-place cache unchanged), and the next good call on the same session succeeds with right
// outputs. Beyond the table: an engine that throws, a call rejected late while another call runs on
// another stream, shapes whose sizes overflow.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/probe_engine.h"

namespace trtet_test {
namespace {

using ex::ErrorCode;

// 20 ms engines: work a rejected call queued would still be running when the test queries its stream.
constexpr const char* kElementwise = "elementwise min=1x4 max=64x4096 spin_us=20000";
constexpr const char* kAliasing = "aliasing n=1024 spin_us=20000";

/// A session, a stream and device arguments for it: x, y -> out (elementwise, [8, 64]) or
/// cache, x -> cache_out (aliasing, [1024]).
struct BadEnv {
  explicit BadEnv(const char* spec_) : spec(spec_), aliasing(std::string(spec_).rfind("aliasing", 0) == 0) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const Shape shape = aliasing ? Shape{1024} : Shape{8, 64};
    for (auto& t : tensors) t = std::make_unique<OwnedTensor>(Memory::kDevice, shape);
    s = make_session(spec);
    refresh();
  }
  ~BadEnv() {
    s.session.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  void refresh() {
    const std::size_t n = static_cast<std::size_t>(tensors[0]->shape().numel());
    v0 = random_floats(n, fresh_seed());
    v1 = random_floats(n, fresh_seed());
    tensors[0]->write(v0);
    tensors[1]->write(v1);
    tensors[2]->poison();
    views = {tensors[0]->view(), tensors[1]->view(), tensors[2]->view()};
  }
  ex::Status execute(TensorView* args, std::size_t count) { return execute_on(stream, *s.session, args, count); }
  ex::Status execute() { return execute(views.data(), 3); }
  /// A tensor of `memory` in place of argument `index` for the case's call, kept until the test
  /// ends: an output is poisoned, an input holds what the fixture's did (v0 or v1).
  OwnedTensor& swap_in(int index, Memory memory, const Shape& shape) {
    swapped.push_back({index, std::make_unique<OwnedTensor>(memory, shape)});
    OwnedTensor& tensor = *swapped.back().second;
    if (index == 2) {
      tensor.poison();
    } else {
      tensor.write(index == 0 ? v0 : v1);
    }
    views[static_cast<std::size_t>(index)] = tensor.view();
    return tensor;
  }
  /// True when no call wrote anything the table's calls could reach: the fixture's tensors and the
  /// swapped-in ones.
  ::testing::AssertionResult nothing_written() {
    if (cudaStreamSynchronize(stream) != cudaSuccess) return ::testing::AssertionFailure() << "stream failed";
    if (!tensors[2]->poison_intact()) return ::testing::AssertionFailure() << "the output's poison was overwritten";
    if (tensors[0]->read() != v0 || tensors[1]->read() != v1) {
      return ::testing::AssertionFailure() << "an input (or the in-place cache) was written";
    }
    for (const auto& [index, tensor] : swapped) {
      const bool intact = index == 2 ? tensor->poison_intact() : tensor->read() == (index == 0 ? v0 : v1);
      if (!intact) return ::testing::AssertionFailure() << "the tensor swapped in for argument " << index << " was written";
    }
    return ::testing::AssertionSuccess();
  }
  void expect_good_call() {
    refresh();
    TRTET_ASSERT_OK(execute());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    if (aliasing) {
      const auto cache = tensors[0]->read();
      for (std::size_t i = 0; i < cache.size(); ++i) ASSERT_EQ(cache[i], v0[i] + v1[i]) << i;
    } else {
      EXPECT_TRUE(axpby_matches(tensors[2]->read(), v0, v1, 2.0f, -0.5f));
    }
  }

  const char* spec;
  bool aliasing;
  cudaStream_t stream = nullptr;
  SessionUnderTest s;
  std::unique_ptr<OwnedTensor> tensors[3];
  std::vector<float> v0, v1;
  std::array<TensorView, 3> views{};
  std::vector<std::pair<int, std::unique_ptr<OwnedTensor>>> swapped;  ///< argument index, tensor
};

/// Runs `call` while `stream` captures (global mode); the capture must end and instantiate.
ex::Status in_capture(BadEnv& env, const std::function<ex::Status()>& call) {
  if (cudaStreamBeginCapture(env.stream, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    return ex::make_error(ErrorCode::kInternal, "test: cudaStreamBeginCapture failed");
  }
  ex::Status status = call();
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(env.stream, &graph), cudaSuccess) << "the rejected call broke the capture";
  if (graph != nullptr) {
    std::size_t nodes = 0;
    EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 0u) << "the rejected call captured work";
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  return status;
}

struct BadCase {
  const char* name;
  const char* spec;
  ErrorCode code;
  const char* fragment;
  std::function<ex::Status(BadEnv&)> call;
  bool needs_two_gpus = false;
  bool destroys = false;  ///< the call destroys the session: the good call uses a new one
  bool green = false;     ///< the call makes green contexts (skipped under initcheck)
};

/// gtest prints a parameter in test listings: the case's name, not its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases = {
      {"TooFewArguments", kElementwise, ErrorCode::kInvalidArgument, "got 2 arguments",
       [](BadEnv& e) { return e.execute(e.views.data(), 2); }},
      {"TooManyArguments", kElementwise, ErrorCode::kInvalidArgument, "got 4 arguments",
       [](BadEnv& e) {
         TensorView four[4] = {e.views[0], e.views[1], e.views[2], e.views[2]};
         return e.execute(four, 4);
       }},
      {"NullArgumentArray", kElementwise, ErrorCode::kInvalidArgument, "null argument array",
       [](BadEnv& e) { return e.execute(nullptr, 3); }},
      {"InputDtype", kElementwise, ErrorCode::kInvalidArgument, "has dtype float16",
       [](BadEnv& e) {
         e.views[0].dtype = DataType::kFloat16;
         return e.execute();
       }},
      {"OutputDtype", kElementwise, ErrorCode::kInvalidArgument, "has dtype int32",
       [](BadEnv& e) {
         e.views[2].dtype = DataType::kInt32;
         return e.execute();
       }},
      {"InputRank", kElementwise, ErrorCode::kInvalidArgument, "rank 1",
       [](BadEnv& e) {
         e.views[1].shape = Shape{512};
         return e.execute();
       }},
      {"DimBelowProfile", kElementwise, ErrorCode::kInvalidArgument, "dimension 1 = 2 is outside",
       [](BadEnv& e) {
         e.views[0].shape = Shape{8, 2};
         return e.execute();
       }},
      {"DimAboveProfile", kElementwise, ErrorCode::kInvalidArgument, "dimension 0 = 65 is outside",
       [](BadEnv& e) {
         e.views[0].shape = Shape{65, 4};
         return e.execute();
       }},
      {"InputCapacityTooSmall", kElementwise, ErrorCode::kInvalidArgument, "holds 100 bytes",
       [](BadEnv& e) {
         e.views[1].capacity_bytes = 100;
         return e.execute();
       }},
      {"InputShapesDisagree", kElementwise, ErrorCode::kInvalidArgument, "differ in shape",
       [](BadEnv& e) {
         e.views[1].shape = Shape{4, 64};
         return e.execute();
       }},
      {"OutputCapacityTooSmallWithoutResize", kElementwise, ErrorCode::kInvalidArgument, "holds 16 bytes",
       [](BadEnv& e) {
         e.views[2].resize = nullptr;
         e.views[2].capacity_bytes = 16;
         return e.execute();
       }},
      {"OutputShapeWrongWithoutResize", kElementwise, ErrorCode::kInvalidArgument, "cannot resize it",
       [](BadEnv& e) {
         e.views[2].resize = nullptr;
         e.views[2].shape = Shape{8, 63};
         return e.execute();
       }},
      {"OutputResizeRefused", kElementwise, ErrorCode::kInvalidArgument, "resize to [8, 64]",
       [](BadEnv& e) {
         e.swap_in(2, Memory::kDevice, Shape{1, 4});  // capacity 16 bytes, cannot grow
         return e.execute();
       }},
      {"NullInputData", kElementwise, ErrorCode::kInvalidArgument, "no data pointer",
       [](BadEnv& e) {
         e.views[0].data = nullptr;
         return e.execute();
       }},
      {"NullOutputData", kElementwise, ErrorCode::kInvalidArgument, "no data pointer",
       [](BadEnv& e) {
         e.views[2].data = nullptr;
         e.views[2].resize = nullptr;
         return e.execute();
       }},
      {"AliasedInputOnHost", kAliasing, ErrorCode::kInvalidArgument, "must be device-resident",
       [](BadEnv& e) {
         e.swap_in(0, Memory::kPageable, Shape{1024});
         return e.execute();
       }},
      {"AliasedInputPinned", kAliasing, ErrorCode::kInvalidArgument, "pinned host",
       [](BadEnv& e) {
         e.swap_in(0, Memory::kPinned, Shape{1024});
         return e.execute();
       }},
      {"AliasedOutputCannotBeRepointed", kAliasing, ErrorCode::kInvalidArgument, "cannot point it",
       [](BadEnv& e) {
         e.views[2].set_data = nullptr;
         return e.execute();
       }},
      {"PageableInputDuringCapture", kElementwise, ErrorCode::kInvalidArgument, "pageable",
       [](BadEnv& e) {
         e.swap_in(0, Memory::kPageable, Shape{8, 64});
         return in_capture(e, [&] { return e.execute(); });
       }},
      {"PageableOutputDuringCapture", kElementwise, ErrorCode::kInvalidArgument, "pageable",
       [](BadEnv& e) {
         e.swap_in(2, Memory::kPageable, Shape{8, 64});
         return in_capture(e, [&] { return e.execute(); });
       }},
      {"InvalidatedCapture", kElementwise, ErrorCode::kInvalidArgument, "invalidated",
       [](BadEnv& e) {
         EXPECT_EQ(cudaStreamBeginCapture(e.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
         EXPECT_NE(cudaStreamSynchronize(e.stream), cudaSuccess);  // illegal in a capture: invalidates it
         ex::Status status = e.execute();
         cudaGraph_t graph = nullptr;
         EXPECT_EQ(cudaStreamEndCapture(e.stream, &graph), cudaErrorStreamCaptureInvalidated);
         if (graph != nullptr) cudaGraphDestroy(graph);
         (void)cudaGetLastError();
         return status;
       }},
      {"GreenContextCurrentWithoutGuard", kElementwise, ErrorCode::kInvalidArgument, "CudaStreamGuard",
       [](BadEnv& e) {
         GreenPartitions green;
         if (!green.ok()) return ex::make_error(ErrorCode::kInternal, "test: no green partitions");
         ScopedCurrentContext current(green.partitions[0].context);
         if (!current.ok()) return ex::make_error(ErrorCode::kInternal, "test: cannot make the green context current");
         return e.s.session->execute(e.views.data(), 3);  // no guard
       },
       false, false, /*green=*/true},
      {"StreamOnAnotherDevice", kElementwise, ErrorCode::kInvalidArgument, "belongs to device 1",
       [](BadEnv& e) {
         cudaStream_t other = nullptr;
         EXPECT_EQ(cudaSetDevice(1), cudaSuccess);
         EXPECT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
         EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
         const ex::Status status = execute_on(other, *e.s.session, e.views.data());
         cudaStreamDestroy(other);
         return status;
       },
       /*needs_two_gpus=*/true},
      {"DeviceMemoryOfAnotherDevice", kElementwise, ErrorCode::kInvalidArgument, "on device 1",
       [](BadEnv& e) {
         void* other = nullptr;
         EXPECT_EQ(cudaSetDevice(1), cudaSuccess);
         EXPECT_EQ(cudaMalloc(&other, 8 * 64 * sizeof(float)), cudaSuccess);
         EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
         e.views[1].data = other;
         ex::Status status = e.execute();
         cudaFree(other);
         return status;
       },
       /*needs_two_gpus=*/true},
      {"DestroyedSession", kElementwise, ErrorCode::kInvalidState, "destroyed",
       [](BadEnv& e) {
         e.s.session->destroy();
         return e.execute();
       },
       false, /*destroys=*/true},
  };
  return cases;
}

class BadInputsGpu : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInputsGpu, FailsEnqueuesNothingAndTheNextGoodCallSucceeds) {
  TRTET_REQUIRE_GPU();
  const BadCase& c = GetParam();
  if (c.green) TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  if (c.needs_two_gpus) {
    int devices = 0;
    ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
    if (devices < 2) GTEST_SKIP() << "needs 2 GPUs";
  }
  BadEnv env(c.spec);
  ASSERT_TRUE(env.s.session);
  const auto enqueues = env.s.engine->enqueue_count();
  const auto calls = env.s.session->stats().calls;

  const ex::Status status = c.call(env);
  // Before any sync: a rejected call queued nothing (a 20 ms engine would still be running).
  EXPECT_EQ(cudaStreamQuery(env.stream), cudaSuccess) << "the rejected call left work on its stream";
  TRTET_EXPECT_ERROR(status, c.code, c.fragment);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed call left a sticky CUDA error";
  if (!c.destroys) {
    EXPECT_EQ(env.s.engine->enqueue_count(), enqueues) << "a failed call enqueued work";
    EXPECT_EQ(env.s.session->stats().calls, calls);
  }
  EXPECT_TRUE(env.nothing_written());

  if (c.destroys) env.s = make_session(c.spec);
  ASSERT_TRUE(env.s.session);
  env.expect_good_call();
}

INSTANTIATE_TEST_SUITE_P(Table, BadInputsGpu, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BadInputsTable, HasAtLeastFifteenCases) { EXPECT_GE(bad_cases().size(), 15u); }

// ---- Rejected and failed calls beyond the table: an error, nothing enqueued, the session usable ----
using ex::CudaStreamGuard;
using RejectionGpu = StreamGpuTest;

// The execute path has one exception fence, at the ExecuTorch boundary (TensorRTBackend's execute
// and init: tests/executorch/regression_gpu_test.cpp), since ExecuTorch does not expect
// exceptions. An engine behind a custom factory may throw (here from set_input_shape, infer_shapes
// or enqueue): the exception passes through Session::execute, what the call queued is covered by
// the session's events on the way (Note [the call schedule]), and the session stays usable.
class ThrowingEngineGpu : public StreamGpuTest, public ::testing::WithParamInterface<ProbeEngine::Throw> {};

TEST_P(ThrowingEngineGpu, AnExceptionFromTheEnginePassesThroughAndTheSessionStaysUsable) {
  auto engine = ProbeEngine::create(0, Shape{1}, Shape{65536});
  TRTET_ASSERT_OK(engine);
  ProbeEngine* probe = engine->get();
  auto s = make_session(std::unique_ptr<TestEngine>(std::move(engine).value()));
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kPinned, Memory::kPinned, Shape{4096});
  probe->throw_in.store(GetParam());
  ex::Status status;
  const std::optional<std::string> escaped = escaped_exception([&] {
    CudaStreamGuard guard(stream_);
    status = s.session->execute(io.args(), 3);
  });
  ASSERT_TRUE(escaped.has_value()) << "the engine's exception was meant to reach the ExecuTorch boundary; the "
                                      "call returned "
                                   << status.to_string();
  EXPECT_NE(escaped->find(ProbeEngine::kThrowMessage), std::string::npos) << *escaped;
  EXPECT_EQ(probe->throws.load(), 1) << "the engine was meant to throw once";
  probe->throw_in.store(ProbeEngine::Throw::kNever);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  io.refresh();
  {
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  EXPECT_TRUE(io.out_matches()) << "the call after the one whose engine threw";
}

INSTANTIATE_TEST_SUITE_P(Where, ThrowingEngineGpu, ::testing::ValuesIn(kThrowSites),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// "Every rejected call ... enqueues nothing", also a call rejected late (an output the runtime
// cannot resize; an aliased output the runtime cannot point at its input): no GPU wait for the
// previous call on another stream, no staging growth before the rejection. The previous call
// (100 ms) still runs on stream A when the rejected call is made on idle stream B: B is still idle
// right after, the host inputs unchanged, the engine not called; then a good call is right.
class LateRejectionGpu : public StreamGpuTest,
                             public ::testing::WithParamInterface<std::tuple<Memory, bool /*aliased*/>> {};

TEST_P(LateRejectionGpu, RejectedCallLeavesItsStreamIdleAndInputsUnchanged) {
  const Memory input = std::get<0>(GetParam());
  const bool aliased = std::get<1>(GetParam());
  OwnedStream busy;
  ASSERT_TRUE(busy.ok());
  const cudaStream_t idle = stream_;
  constexpr std::int64_t kSmall = 4096, kBig = 1 << 18;  // the rejected call would grow the staging
  auto s = make_session(aliased ? "aliasing min=1 max=262144 spin_us=100000"
                                : "elementwise min=1 max=262144 spin_us=100000");
  ASSERT_TRUE(s.session);
  // elementwise: a, b (host inputs), out; aliasing: cache (device), a (host input), cache_out.
  OwnedTensor a(input, Shape{kBig}), b(aliased ? Memory::kDevice : input, Shape{kBig});
  OwnedTensor out(Memory::kDevice, Shape{kBig}), good_out(Memory::kDevice, Shape{kBig});
  OwnedTensor busy_a(Memory::kDevice, Shape{kSmall}), busy_b(Memory::kDevice, Shape{kSmall});
  OwnedTensor busy_out(Memory::kDevice, Shape{kSmall});
  OwnedTensor& cache = b;  // aliasing: the cache, updated in place

  // Expected results, on the CPU: elementwise out = 2a - 0.5b; aliasing cache += x, in call order.
  std::vector<float> cache_expected = fresh_random(kBig);
  if (aliased) cache.write(cache_expected);

  // 1. A good call on the idle stream: staging for kSmall.
  std::vector<float> av = fresh_random(kSmall), bv = fresh_random(kSmall);
  a.write(av);
  if (!aliased) b.write(bv);
  {
    TensorView args[3] = {aliased ? view_of(cache, Shape{kSmall}) : view_of(a, Shape{kSmall}),
                          aliased ? view_of(a, Shape{kSmall}) : view_of(b, Shape{kSmall}), good_out.view()};
    CudaStreamGuard guard(idle);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(idle), cudaSuccess);
  if (aliased) {
    for (std::int64_t j = 0; j < kSmall; ++j) cache_expected[static_cast<std::size_t>(j)] += av[static_cast<std::size_t>(j)];
    ASSERT_TRUE(exactly(cache.read(), cache_expected)) << "the first good call";
  } else {
    ASSERT_TRUE(axpby_matches(good_out.read(), av, bv, 2.0f, -0.5f)) << "the first good call";
  }

  // 2. A call left running on the busy stream (device I/O: returns at once; 100 ms).
  const std::vector<float> busy_av = fresh_random(kSmall), busy_bv = fresh_random(kSmall);
  busy_a.write(busy_av);
  busy_b.write(busy_bv);
  {
    TensorView args[3] = {aliased ? view_of(cache, Shape{kSmall}) : busy_a.view(), aliased ? busy_a.view() : busy_b.view(),
                          busy_out.view()};
    CudaStreamGuard guard(busy);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  if (aliased) {
    for (std::int64_t j = 0; j < kSmall; ++j) cache_expected[static_cast<std::size_t>(j)] += busy_av[static_cast<std::size_t>(j)];
  }

  // 3. The late rejection on the idle stream, with inputs of kBig (more than the staging holds).
  av = fresh_random(kBig);
  bv = fresh_random(kBig);
  a.write(av);
  if (!aliased) b.write(bv);
  TensorView rejected_out = out.view();
  if (aliased) {
    rejected_out.set_data = nullptr;  // `out` is not the cache's memory and the runtime cannot re-point it
  } else {
    rejected_out.shape = Shape{kSmall};  // the engine produces kBig and the runtime cannot resize
    rejected_out.resize = nullptr;
  }
  const auto enqueues = s.engine->enqueue_count();
  ex::Status status;
  {
    TensorView args[3] = {aliased ? cache.view() : a.view(), aliased ? a.view() : b.view(), rejected_out};
    CudaStreamGuard guard(idle);
    status = s.session->execute(args, 3);
  }
  const cudaError_t idle_after = cudaStreamQuery(idle);
  const cudaError_t busy_after = cudaStreamQuery(busy);
  EXPECT_EQ(status.code(), ex::ErrorCode::kInvalidArgument) << status.to_string();
  ASSERT_EQ(busy_after, cudaErrorNotReady) << "the 100 ms call finished before the rejected call returned: nothing "
                                              "was proven";
  EXPECT_EQ(idle_after, cudaSuccess) << "the rejected call left work queued on its idle stream (a wait for the call "
                                        "on the other stream, staging growth or copies): "
                                     << cudaGetErrorString(idle_after);
  EXPECT_EQ(s.engine->enqueue_count(), enqueues) << "the rejected call ran the engine";
  EXPECT_TRUE(exactly(a.read(), av)) << "the rejected call changed its " << to_string(input) << " input";
  if (!aliased) {
    EXPECT_TRUE(exactly(b.read(), bv)) << "the rejected call changed its " << to_string(input) << " input";
  }

  // 4. A good call with the same inputs on the idle stream is right (and ordered after the busy call).
  {
    TensorView args[3] = {aliased ? cache.view() : a.view(), aliased ? a.view() : b.view(), good_out.view()};
    CudaStreamGuard guard(idle);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(idle), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(busy), cudaSuccess);
  if (aliased) {
    for (std::int64_t j = 0; j < kBig; ++j) cache_expected[static_cast<std::size_t>(j)] += av[static_cast<std::size_t>(j)];
    EXPECT_TRUE(exactly(cache.read(), cache_expected)) << "the good call after the rejected one";
  } else {
    EXPECT_TRUE(axpby_matches(good_out.read(), av, bv, 2.0f, -0.5f)) << "the good call after the rejected one";
  }
}

INSTANTIATE_TEST_SUITE_P(InputAndRejection, LateRejectionGpu,
                         ::testing::Combine(::testing::Values(Memory::kPinned, Memory::kPageable), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_AliasedOutputNotRepointable" : "_OutputNotResizable");
                         });

// Sizes computed from shapes do not wrap: an input whose dimensions multiply past 2^63 (elements),
// or whose byte size passes 2^64, is rejected with a clear error naming the input, and nothing
// runs (a wrapped size would be 0 bytes and the call would run as if empty). The engine's profile
// allows such shapes (up to 2^32 per dimension).
TEST_F(RejectionGpu, ShapesWhoseSizeOverflowsAreRejected) {
  auto s = make_session("elementwise min=1x1x1 max=4294967296x4294967296x4294967296");
  ASSERT_TRUE(s.session);
  OwnedTensor x(Memory::kDevice, Shape{64}), y(Memory::kDevice, Shape{64}), out(Memory::kDevice, Shape{64});
  const std::int64_t k21 = std::int64_t{1} << 21, k22 = std::int64_t{1} << 22, k31 = std::int64_t{1} << 31;
  const Shape cases[] = {
      Shape{k22, k22, k22},                    // 2^66 elements: wraps to 0 in int64
      Shape{k21, k21, k21},                    // 2^63 elements: one past INT64_MAX
      Shape{k31, k31, 1},                      // 2^62 elements fit, 2^64 bytes wrap to 0 in size_t
      Shape{3000000000, 3000000000, 3},        // 2.7e19 elements: wraps to a meaningless size
  };
  for (const Shape& shape : cases) {
    TensorView args[3] = {view_of(x, shape), view_of(y, shape), view_of(out, shape)};
    args[2].resize = nullptr;  // the output already has the shape the engine would produce
    ex::Status status;
    {
      CudaStreamGuard guard(stream_);
      status = s.session->execute(args, 3);
    }
    TRTET_EXPECT_ERROR(status, ex::ErrorCode::kInvalidArgument, "\"x\"")
        << "shape " << shape.to_string() << " of float32: rejected with an error naming the input";
    EXPECT_EQ(s.engine->enqueue_count(), 0u) << "shape " << shape.to_string() << " ran the engine";
    EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess) << "shape " << shape.to_string() << " queued work";
  }
}

}  // namespace
}  // namespace trtet_test
