// The adapter over a test-only TensorRT (fake/, built from TensorRT's public headers, loaded by path
// through the same dlopen path as a real runtime): everything that needs a plan, which cannot be
// built where these tests are written. Shapes and profiles, execution on the caller's stream,
// auxiliary streams before every enqueueV3 (directly and through the delegate's Session), weight
// streaming (automatic budget, requested, clamped, never asked of engines without streamable
// weights), aliases, every injected failure with TensorRT's reason and the library's version,
// 8 threads, and the library's release. GPU tests: they skip without a GPU.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <NvInferRuntime.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "blob/format.h"
#include "common/error_match.h"
#include "common/gpu.h"
#include "session/session.h"
#include "session/tensor_view.h"
#include "fake/fake_stats.h"
#include "tensorrt/runtime_library.h"
#include "tensorrt/runtime_search.h"
#include "tensorrt/tensorrt_engine.h"
#include "tensorrt/tensorrt_factory.h"
#include "tensorrt/version.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

using nlohmann::json;

/// The fake library's stats hooks, through the same handle the adapter's dlopen shares.
class FakeLibrary {
 public:
  FakeLibrary() : handle_(dlopen(TRTET_FAKE_NVINFER, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ != nullptr) {
      stats_ = reinterpret_cast<TrtetFakeStats* (*)()>(dlsym(handle_, "trtet_fake_stats"));
      reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "trtet_fake_reset_stats"));
    }
  }
  ~FakeLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeLibrary(const FakeLibrary&) = delete;
  FakeLibrary& operator=(const FakeLibrary&) = delete;
  bool ok() const { return stats_ != nullptr && reset_ != nullptr; }
  TrtetFakeStats& stats() const { return *stats_(); }
  void reset() const { reset_(); }

 private:
  void* handle_;
  TrtetFakeStats* (*stats_)() = nullptr;
  void (*reset_)() = nullptr;
};

std::vector<std::uint8_t> plan_bytes(const json& spec) {
  const std::string text = std::string(TRTET_FAKE_PLAN_MAGIC) + spec.dump();
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

/// x: input [-1, 4] in profile [1, 4]..[8, 4]; y: output [-1, 4] = x + 1.
json add_one_plan() {
  return json{{"tensors",
               {{{"name", "x"}, {"mode", "input"}, {"dtype", "float32"}, {"shape", {-1, 4}}, {"min", {1, 4}},
                 {"max", {8, 4}}},
                {{"name", "y"}, {"mode", "output"}, {"dtype", "float32"}, {"shape", {-1, 4}}, {"from", "x"}}}}};
}

blob::Metadata bindings(std::vector<std::pair<std::string, bool>> listed) {
  blob::Metadata metadata;
  for (auto& [name, is_input] : listed) {
    blob::IoBinding binding;
    binding.name = name;
    binding.is_input = is_input;
    metadata.io_bindings.push_back(binding);
  }
  return metadata;
}

blob::Metadata x_y() { return bindings({{"x", true}, {"y", false}}); }

/// A device buffer freed at scope exit (test code: allocation here is fine).
struct DeviceFloats {
  explicit DeviceFloats(std::size_t count) : count(count) { ok = cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(float)) == cudaSuccess; }
  ~DeviceFloats() {
    if (data != nullptr) cudaFree(data);
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  /// Written and landed: a cudaMemcpy from pageable memory may return before the data reaches the
  /// device, and the non-blocking streams the tests enqueue on do not wait for the legacy stream.
  void write(const std::vector<float>& values) const {
    cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
  }
  std::vector<float> read() const {
    std::vector<float> values(count);
    cudaMemcpy(values.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost);
    return values;
  }
  float* data = nullptr;
  std::size_t count;
  bool ok = false;
};

class FakeTensorRT : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_TRUE(fake_.ok()) << "the test-only TensorRT " << TRTET_FAKE_NVINFER << " did not load: " << dlerror();
    fake_.reset();
  }

  Result<std::unique_ptr<TensorRTEngine>> create(const json& spec, const blob::Metadata& metadata,
                                                 std::optional<std::uint64_t> budget = std::nullopt) {
    bytes_ = plan_bytes(spec);
    EngineRequest request;
    request.engine_bytes = bytes_.data();
    request.engine_size = bytes_.size();
    request.metadata = &metadata;
    request.device = 0;
    request.weight_streaming_budget = budget;
    request.runtime_library = std::string(TRTET_FAKE_NVINFER);
    return TensorRTEngine::create(request);
  }

  /// The label the adapter gives the fake: "TensorRT <headers' version> (runtime at <path>)".
  static std::string label_start() { return "TensorRT " + version_string(static_cast<std::int32_t>(kHeaderVersion)); }

  FakeLibrary fake_;
  std::vector<std::uint8_t> bytes_;
};

#define ASSERT_CREATED(var, expr)                                                        \
  auto var##_result = (expr);                                                            \
  ASSERT_TRUE(var##_result.ok()) << var##_result.status().to_string();                  \
  std::unique_ptr<TensorRTEngine> var = std::move(var##_result).value()

TEST_F(FakeTensorRT, CreatesAContextAndBindsByName) {
  const blob::Metadata metadata = bindings({{"y", false}, {"x", true}});  // the blob's order, not the engine's
  ASSERT_CREATED(engine, create(add_one_plan(), metadata));
  ASSERT_EQ(engine->io_count(), 2);
  EXPECT_EQ(engine->io(0).name, "y");
  EXPECT_FALSE(engine->io(0).is_input);
  EXPECT_EQ(engine->io(1).name, "x");
  EXPECT_EQ(engine->io(1).min_shape, Shape({1, 4}));
  EXPECT_EQ(engine->io(1).max_shape, Shape({8, 4}));
  EXPECT_EQ(engine->runtime_library().version(), NV_TENSORRT_VERSION);
  EXPECT_EQ(engine->runtime_library().kind(), RuntimeKind::kPath);
  EXPECT_EQ(fake_.stats().runtimes_created, 1);
  EXPECT_EQ(fake_.stats().contexts_created, 1);
  EXPECT_EQ(fake_.stats().last_allocation_strategy,
            static_cast<int>(nvinfer1::ExecutionContextAllocationStrategy::kSTATIC));
  EXPECT_EQ(fake_.stats().host_code_allowed, 0) << "engine host code is refused, explicitly, without the option";
  EXPECT_EQ(engine->aux_stream_count(), 0);
}

TEST_F(FakeTensorRT, ShapesFollowTheProfileAndInferenceResolvesOutputs) {
  ASSERT_CREATED(engine, create(add_one_plan(), x_y()));
  // Before any input shape: TensorRT names the input it lacks.
  Result<int> unresolved = engine->infer_shapes();
  ASSERT_FALSE(unresolved.ok());
  TRTET_EXPECT_ERROR(unresolved.status(), ErrorCode::kInvalidArgument,
                     "not sufficiently specified for shape inference: \"x\"");
  TRTET_ASSERT_OK(engine->set_input_shape(0, Shape({3, 4})));
  unresolved = engine->infer_shapes();
  ASSERT_TRUE(unresolved.ok()) << unresolved.status().to_string();
  EXPECT_EQ(unresolved.value(), 0);
  Result<Shape> out = engine->output_shape(1);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out.value(), Shape({3, 4}));
  // Outside profile 0: TensorRT's reason and the library's version in the message.
  const Status outside = engine->set_input_shape(0, Shape({9, 4}));
  TRTET_EXPECT_ERROR(outside, ErrorCode::kInvalidArgument, "outside profile 0");
  EXPECT_EQ(outside.message().rfind(label_start(), 0), 0u) << outside.message();
  TRTET_EXPECT_ERROR(engine->set_input_shape(1, Shape({3, 4})), ErrorCode::kInvalidArgument, "is an output");
  TRTET_EXPECT_ERROR(engine->set_input_shape(2, Shape({3, 4})), ErrorCode::kInvalidArgument, "out of range");
}

TEST_F(FakeTensorRT, DataDependentOutputsStayUnresolved) {
  json spec = add_one_plan();
  spec["tensors"][1]["data_dependent"] = true;
  ASSERT_CREATED(engine, create(spec, x_y()));
  TRTET_ASSERT_OK(engine->set_input_shape(0, Shape({2, 4})));
  Result<int> unresolved = engine->infer_shapes();
  ASSERT_TRUE(unresolved.ok()) << unresolved.status().to_string();
  EXPECT_EQ(unresolved.value(), 1);
  TRTET_EXPECT_ERROR(engine->output_shape(1).status(), ErrorCode::kNotSupported, "no concrete shape");
}

TEST_F(FakeTensorRT, ProfilesTheEngineGivesNoBoundsOfTheirOwnHaveProfileZerosBounds) {
  json spec = add_one_plan();
  spec["profiles"] = 3;
  ASSERT_CREATED(engine, create(spec, x_y()));
  EXPECT_EQ(engine->profile_count(), 3);
  EXPECT_EQ(engine->io(0).max_shape, Shape({8, 4}));
  EXPECT_EQ(engine->input_bounds(2, 0).max, Shape({8, 4}));
  TRTET_EXPECT_OK(engine->set_input_shape(0, Shape({8, 4})));
}

// Two profiles with their own bounds: the adapter reports both, makes profile 1's context on its first
// selection (its own device memory, setOptimizationProfileAsync on the caller's stream), and the
// delegate's calls choose the profile from their shapes, with right outputs on both.
TEST_F(FakeTensorRT, EveryProfileIsServedByItsOwnContext) {
  json spec = add_one_plan();
  spec["profiles"] = 2;
  spec["tensors"][0]["profiles"] = json::array({json{{"min", {9, 4}}, {"max", {64, 4}}}});
  ASSERT_CREATED(engine, create(spec, x_y()));
  ASSERT_EQ(engine->profile_count(), 2);
  EXPECT_EQ(engine->input_bounds(0, 0).max, Shape({8, 4}));
  EXPECT_EQ(engine->input_bounds(1, 0).min, Shape({9, 4}));
  EXPECT_EQ(engine->input_bounds(1, 0).max, Shape({64, 4}));
  EXPECT_EQ(fake_.stats().contexts_created, 1) << "profile 1's context waits for its first use";
  delegate::Session session{engine::EnginePtr(std::move(engine))};
  TRTET_ASSERT_OK(session.initialize());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DeviceFloats x(256), y(256);
  ASSERT_TRUE(x.ok && y.ok);
  for (const std::int64_t rows : {2, 40, 8, 64, 1}) {
    std::vector<float> values(static_cast<std::size_t>(rows) * 4);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) + 0.5f;
    x.write(values);
    delegate::TensorView views[2];
    for (delegate::TensorView& view : views) {
      view.capacity_bytes = 256 * sizeof(float);
      view.shape = Shape({rows, 4});
      view.hint = delegate::MemoryHint::kDevice;
    }
    views[0].data = x.data;
    views[1].data = y.data;
    {
      CudaStreamGuard guard(stream);
      TRTET_ASSERT_OK(session.execute(views, 2));
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<float> out = y.read();
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(out[i], values[i] + 1.0f) << rows << " rows, element " << i;
    EXPECT_EQ(session.stats().last_profile, rows <= 8 ? 0 : 1) << rows << " rows";
  }
  EXPECT_EQ(fake_.stats().contexts_created, 2);
  EXPECT_EQ(fake_.stats().last_allocation_strategy,
            static_cast<int>(nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED));
  EXPECT_EQ(fake_.stats().device_memory_set, 2 * 65536) << "profile 1's context gets its own device memory";
  EXPECT_EQ(fake_.stats().profile_selections, 1) << "set once, when profile 1's context was made";
  EXPECT_EQ(fake_.stats().last_profile_selected, 1);
  EXPECT_EQ(fake_.stats().last_profile_stream, static_cast<void*>(stream)) << "on the caller's stream";
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(FakeTensorRT, EnqueueRunsOnTheCallersStream) {
  ASSERT_CREATED(engine, create(add_one_plan(), x_y()));
  DeviceFloats x(12), y(12);
  ASSERT_TRUE(x.ok && y.ok);
  std::vector<float> values(12);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  x.write(values);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  TRTET_ASSERT_OK(engine->set_input_shape(0, Shape({3, 4})));
  ASSERT_TRUE(engine->infer_shapes().ok());
  TRTET_ASSERT_OK(engine->set_tensor_address(0, x.data));
  TRTET_ASSERT_OK(engine->set_tensor_address(1, y.data));
  TRTET_ASSERT_OK(engine->enqueue(stream));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<float> out = y.read();
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], values[i] + 1.0f) << i;
  EXPECT_EQ(fake_.stats().enqueues, 1);
  EXPECT_EQ(fake_.stats().last_enqueue_stream, static_cast<void*>(stream));
  EXPECT_EQ(fake_.stats().enqueues_on_default_stream, 0);
  EXPECT_FALSE(engine->enqueue_is_synchronous());
  cudaStreamDestroy(stream);
}

TEST_F(FakeTensorRT, AuxiliaryStreamsAreHandedOverBeforeEveryEnqueue) {
  json spec = add_one_plan();
  spec["aux_streams"] = 2;
  ASSERT_CREATED(engine, create(spec, x_y()));
  ASSERT_EQ(engine->aux_stream_count(), 2);
  DeviceFloats x(8), y(8);
  ASSERT_TRUE(x.ok && y.ok);
  x.write(std::vector<float>(8, 1.0f));
  cudaStream_t stream = nullptr;
  cudaStream_t aux[2] = {nullptr, nullptr};
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t& s : aux) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // Refused: a count other than the engine's, a default stream among them.
  TRTET_EXPECT_ERROR(engine->set_aux_streams(aux, 1), ErrorCode::kInvalidArgument, "uses 2 auxiliary streams");
  cudaStream_t with_default[2] = {aux[0], cudaStreamPerThread};
  TRTET_EXPECT_ERROR(engine->set_aux_streams(with_default, 2), ErrorCode::kInvalidArgument, "default stream");
  // Handed to the adapter once, to TensorRT before each of three enqueues.
  TRTET_ASSERT_OK(engine->set_aux_streams(aux, 2));
  TRTET_ASSERT_OK(engine->set_input_shape(0, Shape({2, 4})));
  TRTET_ASSERT_OK(engine->set_tensor_address(0, x.data));
  TRTET_ASSERT_OK(engine->set_tensor_address(1, y.data));
  for (int i = 0; i < 3; ++i) TRTET_ASSERT_OK(engine->enqueue(stream));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(fake_.stats().enqueues_with_aux_streams, 3);
  EXPECT_EQ(fake_.stats().enqueues_without_aux_streams, 0);
  ASSERT_EQ(fake_.stats().last_aux_stream_count, 2);
  EXPECT_EQ(fake_.stats().last_aux_streams[0], static_cast<void*>(aux[0]));
  EXPECT_EQ(fake_.stats().last_aux_streams[1], static_cast<void*>(aux[1]));
  EXPECT_EQ(y.read(), std::vector<float>(8, 2.0f));
  cudaStreamDestroy(stream);
  for (cudaStream_t s : aux) cudaStreamDestroy(s);
}

TEST_F(FakeTensorRT, TheDelegateSessionGetsAuxStreamsIntoEveryEnqueueOnOneStream) {
  json spec = add_one_plan();
  spec["aux_streams"] = 1;
  ASSERT_CREATED(engine, create(spec, x_y()));
  delegate::Session session{engine::EnginePtr(std::move(engine))};
  TRTET_ASSERT_OK(session.initialize());
  DeviceFloats x(8), y(8);
  ASSERT_TRUE(x.ok && y.ok);
  x.write(std::vector<float>(8, 3.0f));
  delegate::TensorView views[2];
  views[0].data = x.data;
  views[0].capacity_bytes = 8 * sizeof(float);
  views[0].shape = Shape({2, 4});
  views[0].hint = delegate::MemoryHint::kDevice;
  views[1].data = y.data;
  views[1].capacity_bytes = 8 * sizeof(float);
  views[1].shape = Shape({2, 4});
  views[1].hint = delegate::MemoryHint::kDevice;
  // No guard: every call on cudaStreamPerThread, so the delegate binds the streams once.
  for (int i = 0; i < 3; ++i) TRTET_ASSERT_OK(session.execute(views, 2));
  EXPECT_EQ(fake_.stats().enqueues, 3);
  EXPECT_EQ(fake_.stats().enqueues_with_aux_streams, 3);
  EXPECT_EQ(fake_.stats().enqueues_without_aux_streams, 0);
  EXPECT_EQ(y.read(), std::vector<float>(8, 4.0f));
}

TEST_F(FakeTensorRT, EnginesWithoutStreamableWeightsAreNeverAskedAboutBudgets) {
  for (const std::optional<std::uint64_t> budget : {std::optional<std::uint64_t>(), std::optional<std::uint64_t>(4096)}) {
    ASSERT_CREATED(engine, create(add_one_plan(), x_y(), budget));
    EXPECT_EQ(engine->streamable_weights_size(), 0);
    EXPECT_EQ(engine->weight_streaming_budget(), std::nullopt);
    EXPECT_FALSE(engine->enqueue_is_synchronous());
  }
  EXPECT_EQ(fake_.stats().weight_streaming_calls_without_streamable_weights, 0);
  EXPECT_EQ(fake_.stats().budget_sets, 0);
}

TEST_F(FakeTensorRT, StreamingEnginesTakeTensorRTsAutomaticBudgetByDefault) {
  json spec = add_one_plan();
  spec["streamable_bytes"] = 1000;
  spec["automatic_budget"] = 400;
  ASSERT_CREATED(engine, create(spec, x_y()));
  EXPECT_EQ(fake_.stats().automatic_budget_queries, 1);
  EXPECT_EQ(fake_.stats().budget_sets, 1);
  EXPECT_EQ(fake_.stats().last_budget_set, 400);
  EXPECT_EQ(engine->weight_streaming_budget(), std::optional<std::int64_t>(400));
  EXPECT_TRUE(engine->enqueue_is_synchronous());
}

TEST_F(FakeTensorRT, ARequestedBudgetWinsAndIsClamped) {
  json spec = add_one_plan();
  spec["streamable_bytes"] = 1000;
  spec["automatic_budget"] = 400;
  {
    ASSERT_CREATED(engine, create(spec, x_y(), std::uint64_t{100}));
    EXPECT_EQ(engine->weight_streaming_budget(), std::optional<std::int64_t>(100));
    EXPECT_TRUE(engine->enqueue_is_synchronous());
  }
  {
    ASSERT_CREATED(engine, create(spec, x_y(), std::uint64_t{1} << 40));
    EXPECT_EQ(engine->weight_streaming_budget(), std::optional<std::int64_t>(1000));  // everything resident
    EXPECT_FALSE(engine->enqueue_is_synchronous());
  }
  EXPECT_EQ(fake_.stats().automatic_budget_queries, 0);
  EXPECT_EQ(fake_.stats().budget_sets, 2);
}

TEST_F(FakeTensorRT, WithoutAnAutomaticBudgetTensorRTsDefaultStays) {
  json spec = add_one_plan();
  spec["streamable_bytes"] = 1000;
  spec["automatic_budget"] = -1;
  ASSERT_CREATED(engine, create(spec, x_y()));
  EXPECT_EQ(fake_.stats().budget_sets, 0);
  EXPECT_EQ(engine->weight_streaming_budget(), std::optional<std::int64_t>(1000));
  EXPECT_FALSE(engine->enqueue_is_synchronous());
}

TEST_F(FakeTensorRT, ARefusedBudgetIsAnInvalidArgumentWithTensorRTsReason) {
  json spec = add_one_plan();
  spec["streamable_bytes"] = 1000;
  spec["fail"] = {"set_budget"};
  Result<std::unique_ptr<TensorRTEngine>> engine = create(spec, x_y(), std::uint64_t{10});
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR(engine.status(), ErrorCode::kInvalidArgument, "rejected weight-streaming budget 10 (requested");
  TRTET_EXPECT_ERROR(engine.status(), ErrorCode::kInvalidArgument,
                     "fake TensorRT: setWeightStreamingBudgetV2: budget 10 refused");
}

TEST_F(FakeTensorRT, AliasesComeFromTheBlobAndMatchTheEngine) {
  json spec = add_one_plan();
  spec["tensors"][1]["aliased_input"] = "x";
  blob::Metadata metadata = x_y();
  Result<std::unique_ptr<TensorRTEngine>> undeclared = create(spec, metadata);
  ASSERT_FALSE(undeclared.ok());
  TRTET_EXPECT_ERROR(undeclared.status(), ErrorCode::kInvalidProgram, "the engine deserialized by " + label_start());
  metadata.aliased_io.push_back(blob::AliasedIo{"y", "x", blob::AliasKind::kKvCacheUpdate});
  ASSERT_CREATED(engine, create(spec, metadata));
  ASSERT_EQ(engine->aliases().size(), 1u);
  EXPECT_EQ(engine->aliases()[0].output, 1);
  EXPECT_EQ(engine->aliases()[0].input, 0);
  EXPECT_EQ(engine->aliases()[0].kind, engine::AliasKind::kKvCacheUpdate);
}

TEST_F(FakeTensorRT, IoTheDelegateCannotBindIsRefused) {
  json host = add_one_plan();
  host["tensors"][0]["location"] = "host";
  TRTET_EXPECT_ERROR(create(host, x_y()).status(), ErrorCode::kNotSupported, "\"x\"");
  json vectorized = add_one_plan();
  vectorized["tensors"][1]["format"] = "chw4";
  TRTET_EXPECT_ERROR(create(vectorized, x_y()).status(), ErrorCode::kNotSupported, "\"y\"");
  json int4 = add_one_plan();
  int4["tensors"][0]["dtype"] = "int4";
  TRTET_EXPECT_ERROR(create(int4, x_y()).status(), ErrorCode::kInvalidProgram, "\"x\"");
  TRTET_EXPECT_ERROR(create(add_one_plan(), bindings({{"x", true}, {"z", false}})).status(), ErrorCode::kInvalidProgram,
               "\"z\"");
}

TEST_F(FakeTensorRT, InjectedFailuresCarryTensorRTsReasonAndTheVersion) {
  struct Case {
    const char* fail;
    ErrorCode code;
    const char* says;
  };
  for (const Case& c : {Case{"deserialize", ErrorCode::kInvalidProgram, "could not deserialize the engine"},
                        Case{"create_context", ErrorCode::kInternal, "could not create an execution context"}}) {
    SCOPED_TRACE(c.fail);
    json spec = add_one_plan();
    spec["fail"] = {c.fail};
    const Status status = create(spec, x_y()).status();
    TRTET_EXPECT_ERROR(status, c.code, c.says);
    TRTET_EXPECT_ERROR(status, c.code, "injected failure");
    EXPECT_EQ(status.message().rfind(label_start(), 0), 0u) << status.message();
  }
  // Failures after creation.
  for (const char* fail : {"set_input_shape", "infer_shapes", "set_address", "enqueue"}) {
    SCOPED_TRACE(fail);
    json spec = add_one_plan();
    spec["fail"] = {fail};
    ASSERT_CREATED(engine, create(spec, x_y()));
    DeviceFloats x(4), y(4);
    ASSERT_TRUE(x.ok && y.ok);
    Status status = engine->set_input_shape(0, Shape({1, 4}));
    if (status.ok()) {
      Result<int> inferred = engine->infer_shapes();
      status = inferred.status();
    }
    if (status.ok()) status = engine->set_tensor_address(0, x.data);
    if (status.ok()) status = engine->set_tensor_address(1, y.data);
    if (status.ok()) status = engine->enqueue(cudaStreamPerThread);
    ASSERT_FALSE(status.ok());
    TRTET_EXPECT_ERROR_SAYS(status, "injected failure");
    EXPECT_EQ(status.message().rfind(label_start(), 0), 0u) << status.message();
    EXPECT_EQ(status.code(), std::string(fail) == "enqueue" ? ErrorCode::kInternal : ErrorCode::kInvalidArgument)
        << status.to_string();
  }
}

TEST_F(FakeTensorRT, EightThreadsRunEnginesAtOnce) {
  constexpr int kThreads = 8;
  std::vector<std::string> failures(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  const std::vector<std::uint8_t> bytes = plan_bytes(add_one_plan());
  const blob::Metadata metadata = x_y();
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::string& failure = failures[static_cast<std::size_t>(i)];
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      EngineRequest request;
      request.engine_bytes = bytes.data();
      request.engine_size = bytes.size();
      request.metadata = &metadata;
      request.runtime_library = std::string(TRTET_FAKE_NVINFER);
      Result<engine::EnginePtr> engine = make_tensorrt_engine(request);
      if (!engine.ok()) {
        failure = engine.status().to_string();
        return;
      }
      DeviceFloats x(4), y(4);
      x.write(std::vector<float>(4, static_cast<float>(i)));
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      Status status = engine.value()->set_input_shape(0, Shape({1, 4}));
      if (status.ok()) status = engine.value()->set_tensor_address(0, x.data);
      if (status.ok()) status = engine.value()->set_tensor_address(1, y.data);
      if (status.ok()) status = engine.value()->enqueue(stream);
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
      if (!status.ok()) {
        failure = status.to_string();
      } else if (y.read() != std::vector<float>(4, static_cast<float>(i) + 1.0f)) {
        failure = "wrong output";
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(failures[static_cast<std::size_t>(i)], "") << "thread " << i;
  EXPECT_EQ(fake_.stats().runtimes_created, kThreads);
  EXPECT_EQ(fake_.stats().runtimes_destroyed, kThreads);
}

// The dispatch runtime runs an engine's host code (setEngineHostCodeAllowed(true)), so only the
// application may allow it: a runtime named as the dispatch runtime is refused without the load-time
// option allow_engine_host_code (the message names it), and served with it, host code allowed.
TEST_F(FakeTensorRT, TheDispatchRuntimeNeedsTheHostCodeOption) {
  // A copy of the fake under the dispatch runtime's file name, in a private directory, loaded by its
  // path only (it shadows nothing): the adapter takes the kind from the name.
  char dir_template[] = "/tmp/trtet-dispatch-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  const std::string copy = std::string(dir) + "/" + runtime_file_name(RuntimeKind::kDispatch, NV_TENSORRT_MAJOR);
  {
    std::ifstream from(TRTET_FAKE_NVINFER, std::ios::binary);
    std::ofstream to(copy, std::ios::binary);
    to << from.rdbuf();
  }
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto copy_stats = reinterpret_cast<TrtetFakeStats* (*)()>(dlsym(handle, "trtet_fake_stats"));
  ASSERT_NE(copy_stats, nullptr);
  const blob::Metadata metadata = x_y();
  bytes_ = plan_bytes(add_one_plan());
  EngineRequest request;
  request.engine_bytes = bytes_.data();
  request.engine_size = bytes_.size();
  request.metadata = &metadata;
  request.runtime_library = copy;
  for (const std::optional<bool> option : {std::optional<bool>(), std::optional<bool>(false)}) {
    request.allow_engine_host_code = option;
    Result<std::unique_ptr<TensorRTEngine>> engine = TensorRTEngine::create(request);
    ASSERT_FALSE(engine.ok()) << "the dispatch runtime served an engine without allow_engine_host_code";
    TRTET_EXPECT_ERROR(engine.status(), ErrorCode::kInvalidArgument, "allow_engine_host_code=true");
    EXPECT_EQ(copy_stats()->runtimes_created, 0) << "no runtime of the refused library is made";
  }
  request.allow_engine_host_code = true;
  {
    Result<std::unique_ptr<TensorRTEngine>> engine = TensorRTEngine::create(request);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EXPECT_EQ(engine.value()->runtime_library().kind(), RuntimeKind::kDispatch);
    EXPECT_TRUE(engine.value()->host_code_allowed());
    EXPECT_EQ(copy_stats()->host_code_allowed, 1);
  }
  EXPECT_EQ(fake_.stats().host_code_allowed, -1);  // the fake under its own name was not asked
  dlclose(handle);
  std::remove(copy.c_str());
  rmdir(dir);
}

// A plan that carries host code (the fake refuses it unless allowed, as TensorRT does) loads on any
// runtime only with the option; without it the error names the option.
TEST_F(FakeTensorRT, APlanWithHostCodeLoadsOnlyWithTheOption) {
  const blob::Metadata metadata = x_y();
  json plan = add_one_plan();
  plan["host_code"] = true;
  bytes_ = plan_bytes(plan);
  EngineRequest request;
  request.engine_bytes = bytes_.data();
  request.engine_size = bytes_.size();
  request.metadata = &metadata;
  request.runtime_library = std::string(TRTET_FAKE_NVINFER);
  Result<std::unique_ptr<TensorRTEngine>> refused = TensorRTEngine::create(request);
  ASSERT_FALSE(refused.ok());
  TRTET_EXPECT_ERROR(refused.status(), ErrorCode::kInvalidProgram, "allow_engine_host_code=true");
  EXPECT_EQ(fake_.stats().host_code_allowed, 0);
  request.allow_engine_host_code = true;
  Result<std::unique_ptr<TensorRTEngine>> allowed = TensorRTEngine::create(request);
  ASSERT_TRUE(allowed.ok()) << allowed.status().to_string();
  EXPECT_EQ(fake_.stats().host_code_allowed, 1);
}

TEST_F(FakeTensorRT, DestroyingTheEngineReleasesEverythingAndTheLibrary) {
  const int before = open_runtime_library_count();
  {
    ASSERT_CREATED(engine, create(add_one_plan(), x_y()));
    EXPECT_EQ(open_runtime_library_count(), before + 1);
  }
  EXPECT_EQ(open_runtime_library_count(), before);
  EXPECT_EQ(fake_.stats().contexts_destroyed, fake_.stats().contexts_created);
  EXPECT_EQ(fake_.stats().engines_destroyed, fake_.stats().engines_created);
  EXPECT_EQ(fake_.stats().runtimes_destroyed, fake_.stats().runtimes_created);
  // A bad plan: the runtime made for it is destroyed too.
  const Status bad = create(json{{"tensors", "not a list"}}, x_y()).status();
  TRTET_EXPECT_ERROR(bad, ErrorCode::kInvalidProgram, "malformed");
  EXPECT_EQ(fake_.stats().runtimes_destroyed, fake_.stats().runtimes_created);
  EXPECT_EQ(open_runtime_library_count(), before);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
