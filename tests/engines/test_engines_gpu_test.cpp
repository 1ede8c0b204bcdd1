// GPU tests of the test engines themselves, driven through the seam without the delegate: the
// kernels compute what the delegate tests will compare against, the spin lasts, aux streams fork
// and join, SMs are recorded.
#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <vector>

#include "common/gpu.h"
#include "common/random.h"
#include "common/stream_gpu_test.h"
#include "engines/aliasing_engine.h"
#include "engines/aux_stream_engine.h"
#include "engines/elementwise_engine.h"
#include "engines/kernels.h"
#include "engines/sum_engine.h"
#include "engines/test_engine_factory.h"

namespace trtet_test {
namespace {

struct DeviceFloats {
  explicit DeviceFloats(const std::vector<float>& host) : n(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), std::max<std::size_t>(n, 1) * sizeof(float)), cudaSuccess);
    if (n) {
      EXPECT_EQ(cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);  // a pageable copy may still be landing
    }
  }
  ~DeviceFloats() { cudaFree(data); }
  std::vector<float> read() const {
    std::vector<float> host(n);
    if (n) {
      EXPECT_EQ(cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return host;
  }
  float* data = nullptr;
  std::size_t n;
};

/// Inputs 0 .. count-1 of `engine` set to `shape`.
void set_input_shapes(ex::engine::Engine& engine, const Shape& shape, int count) {
  for (int index = 0; index < count; ++index) TRTET_ASSERT_OK(engine.set_input_shape(index, shape));
}

/// Binding i of `engine` at the i-th buffer.
void set_addresses(ex::engine::Engine& engine, std::initializer_list<const DeviceFloats*> buffers) {
  int index = 0;
  for (const DeviceFloats* buffer : buffers) TRTET_ASSERT_OK(engine.set_tensor_address(index++, buffer->data));
}

class TestEnginesGpu : public StreamGpuTest {};

TEST_F(TestEnginesGpu, ElementwiseComputesAxpbyAndRecordsSms) {
  KernelOptions options;
  options.a = 1.5f;
  options.b = -2.0f;
  options.kernels = 3;
  options.record_sms = true;
  auto engine_or = ElementwiseEngine::create(0, Shape{1, 4}, Shape{64, 4096}, options);
  TRTET_ASSERT_OK(engine_or);
  ElementwiseEngine& engine = **engine_or;
  const Shape shape{33, 1000};
  const auto x = random_floats(33000, 1), y = random_floats(33000, 2);
  DeviceFloats dx(x), dy(y), dout(std::vector<float>(33000, -777.0f));
  ASSERT_NO_FATAL_FAILURE(set_input_shapes(engine, shape, 2));
  auto unresolved = engine.infer_shapes();
  TRTET_ASSERT_OK(unresolved);
  EXPECT_EQ(*unresolved, 0);
  ASSERT_NO_FATAL_FAILURE(set_addresses(engine, {&dx, &dy, &dout}));
  TRTET_ASSERT_OK(engine.enqueue(stream_));
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto out = dout.read();
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], 1.5f * x[i] - 2.0f * y[i], 1e-4f) << i;
  auto sms = engine.recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_GT(sms->size(), 1u);
  EXPECT_EQ(engine.enqueue_count(), 1u);
  TRTET_ASSERT_OK(engine.clear_recorded_sms());
  auto cleared = engine.recorded_sms();
  TRTET_ASSERT_OK(cleared);
  EXPECT_TRUE(cleared->empty());
}

// record_sms=probe: the saturating marker runs only from a clear to the next read, so outside a probe
// an enqueue runs the engine's own kernel alone. One block of the waves kernel runs on one SM; the
// marker covers every SM the stream may use.
TEST_F(TestEnginesGpu, AProbeEngineMarksItsSmsOnlyDuringAProbe) {
  auto engine_or = make_test_engine("waves blocks=1 spin_us=0 min=1x4 max=1x1024 record_sms=probe", 0);
  TRTET_ASSERT_OK(engine_or);
  auto* engine = dynamic_cast<CudaTestEngine*>(engine_or->get());
  ASSERT_NE(engine, nullptr);
  DeviceFloats dx(random_floats(1024, 5)), dy(random_floats(1024, 6)), dout(std::vector<float>(1024));
  ASSERT_NO_FATAL_FAILURE(set_input_shapes(**engine_or, Shape{1, 1024}, 2));
  TRTET_ASSERT_OK((*engine_or)->infer_shapes());
  ASSERT_NO_FATAL_FAILURE(set_addresses(**engine_or, {&dx, &dy, &dout}));
  auto call_and_read = [&]() -> std::vector<int> {
    EXPECT_TRUE((*engine_or)->enqueue(stream_).ok());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    auto sms = engine->recorded_sms();
    EXPECT_TRUE(sms.ok()) << sms.status().to_string();
    return sms.ok() ? *sms : std::vector<int>{};
  };
  // No probe yet: the one block's SM only.
  EXPECT_LE(call_and_read().size(), 1u);
  // A probe: the marker saturates the device.
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  EXPECT_GT(call_and_read().size(), static_cast<std::size_t>(engine->device_sm_count() / 2));
  // That read ended the probe. Another clear starts one and its read (nothing called between: no
  // SM) ends it: a call after it runs the one block alone again.
  TRTET_ASSERT_OK(engine->clear_recorded_sms());
  auto none = engine->recorded_sms();
  TRTET_ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  EXPECT_LE(call_and_read().size(), 1u);
}

TEST_F(TestEnginesGpu, SpinMakesA50MsEngine) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  auto engine_or = make_test_engine("elementwise n=256 spin_us=50000", 0);
  TRTET_ASSERT_OK(engine_or);
  auto& engine = **engine_or;
  DeviceFloats dx(random_floats(256, 3)), dy(random_floats(256, 4)), dout(std::vector<float>(256));
  ASSERT_NO_FATAL_FAILURE(set_input_shapes(engine, Shape{256}, 2));
  TRTET_ASSERT_OK(engine.infer_shapes());
  ASSERT_NO_FATAL_FAILURE(set_addresses(engine, {&dx, &dy, &dout}));
  const auto start = std::chrono::steady_clock::now();
  TRTET_ASSERT_OK(engine.enqueue(stream_));
  const auto queued = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto done = std::chrono::steady_clock::now();
  using Ms = std::chrono::duration<double, std::milli>;
  EXPECT_LT(Ms(queued - start).count(), 1.0);
  EXPECT_GE(Ms(done - start).count(), 49.0);
}

TEST_F(TestEnginesGpu, AuxStreamEngineForksAndJoins) {
  KernelOptions options;
  options.record_sms = true;
  options.spin_us = 200;
  auto engine_or = AuxStreamEngine::create(0, Shape{1}, Shape{1 << 20}, options);
  TRTET_ASSERT_OK(engine_or);
  AuxStreamEngine& engine = **engine_or;
  const std::size_t n = 100000;
  const auto x = random_floats(n, 5), y = random_floats(n, 6);
  DeviceFloats dx(x), dy(y), dout(std::vector<float>(n, -777.0f));
  ASSERT_NO_FATAL_FAILURE(set_input_shapes(engine, Shape{static_cast<std::int64_t>(n)}, 2));
  TRTET_ASSERT_OK(engine.infer_shapes());
  ASSERT_NO_FATAL_FAILURE(set_addresses(engine, {&dx, &dy, &dout}));
  EXPECT_EQ(engine.enqueue(stream_).code(), ErrorCode::kInvalidState);  // no aux streams yet
  cudaStream_t aux[2] = {};
  for (auto& s : aux) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  TRTET_ASSERT_OK(engine.set_aux_streams(aux, 2));
  TRTET_ASSERT_OK(engine.enqueue(stream_));
  // Joined: synchronizing the main stream alone is enough.
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(aux[0]), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(aux[1]), cudaSuccess);
  const auto out = dout.read();
  for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], 2.0f * x[i] + (-0.5f) * y[i], 1e-4f) << i;
  for (auto& s : aux) cudaStreamDestroy(s);
}

TEST_F(TestEnginesGpu, AliasingEngineUpdatesInPlaceAtTheBoundOutput) {
  auto engine_or = AliasingEngine::create(0, Shape{1024}, Shape{1024});
  TRTET_ASSERT_OK(engine_or);
  AliasingEngine& engine = **engine_or;
  ASSERT_EQ(engine.aliases().size(), 1u);
  EXPECT_EQ(engine.aliases()[0].output, 2);
  EXPECT_EQ(engine.aliases()[0].input, 0);
  const auto cache = random_floats(1024, 7), x = random_floats(1024, 8);
  DeviceFloats dcache(cache), dx(x);
  ASSERT_NO_FATAL_FAILURE(set_input_shapes(engine, Shape{1024}, 2));
  TRTET_ASSERT_OK(engine.infer_shapes());
  ASSERT_NO_FATAL_FAILURE(set_addresses(engine, {&dcache, &dx, &dcache}));
  TRTET_ASSERT_OK(engine.enqueue(stream_));
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto updated = dcache.read();
  for (std::size_t i = 0; i < 1024; ++i) ASSERT_FLOAT_EQ(updated[i], cache[i] + x[i]) << i;
}

TEST_F(TestEnginesGpu, SumEngineReportsShapeOne) {
  auto engine_or = SumEngine::create(0, Shape{1}, Shape{4096});
  TRTET_ASSERT_OK(engine_or);
  SumEngine& engine = **engine_or;
  const auto x = random_floats(1000, 9);
  DeviceFloats dx(x), dtotal(std::vector<float>(1, -777.0f));
  TRTET_ASSERT_OK(engine.set_input_shape(0, Shape{1000}));
  TRTET_ASSERT_OK(engine.infer_shapes());
  auto shape = engine.output_shape(1);
  TRTET_ASSERT_OK(shape);
  EXPECT_EQ(*shape, (Shape{1}));
  ASSERT_NO_FATAL_FAILURE(set_addresses(engine, {&dx, &dtotal}));
  TRTET_ASSERT_OK(engine.enqueue(stream_));
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  double expected = 0;
  for (float f : x) expected += f;
  EXPECT_NEAR(dtotal.read()[0], expected, 1e-2);
}

}  // namespace
}  // namespace trtet_test
