// A table of bad calls: each returns its error code and a message naming what is wrong, enqueues
// nothing (its stream idle right after the call, before any sync, though the engine runs 20 ms; the
// engine's counter; the poison of every output, the fixture's and the ones a case swaps in; every
// input and in-place cache unchanged), and the next good call on the same session succeeds with right
// outputs.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/gpu.h"
#include "delegate/session_fixture.h"

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
  EXPECT_EQ(status.code(), c.code) << status.to_string();
  EXPECT_NE(status.message().find(c.fragment), std::string::npos)
      << "message \"" << status.message() << "\" lacks \"" << c.fragment << "\"";
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

}  // namespace
}  // namespace trtet_test
