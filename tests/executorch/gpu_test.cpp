// The .pte programs run end to end on a GPU through the real ExecuTorch runtime, in the three
// cases of Note [Execute contract], and README's usage snippet as written. Every call's output is
// poisoned first (kPoison) and its inputs differ from the previous call's, so an output left over
// shows. Label gpu: each test skips, with CUDA's reason, where no GPU is usable.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "common/gpu.h"
#include "common/memory.h"
#include "common/stream_gpu_test.h"
#include "engines/cuda_test_engine.h"
#include "executorch/module_test_support.h"
#include "executorch/readme_usage.h"
#include "green/probe.h"
#include "green/split.h"

namespace trtet_test {
namespace {

namespace green = ex::green;

constexpr int kRows = 8;
constexpr int kCols = 64;
constexpr std::size_t kCount = kRows * kCols;
constexpr std::size_t kBytes = kCount * sizeof(float);

void fill_inputs(std::vector<float>& x, std::vector<float>& y) { fill_elementwise_inputs(x, y, kCount); }

void expect_elementwise(const float* out, const std::vector<float>& x, const std::vector<float>& y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_FLOAT_EQ(out[i], elementwise_expected(x[i], y[i])) << "element " << i;
  }
}

class ExecuTorchGpu : public ModuleGpuTest {
 protected:
  CudaTestEngine* engine() { return dynamic_cast<CudaTestEngine*>(factory_.last_engine()); }

  /// A 16-SM green-context partition and the remainder, each with one stream.
  void make_partitions() {
    auto partitions = green::split_device(0, green::SplitRequest::counts({16}, /*remainder=*/true));
    ASSERT_TRUE(partitions.ok()) << partitions.status().to_string();
    partitions_ = std::move(partitions).value();
    ASSERT_EQ(partitions_.size(), 2u);
    auto stream = partitions_[0].context.make_stream();
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    stream_ = *stream;
    auto other = partitions_[1].context.make_stream();
    ASSERT_TRUE(other.ok()) << other.status().to_string();
    remainder_stream_ = *other;
  }

  /// Device buffers for x, y, out with the inputs uploaded.
  void make_device_io() {
    fill_inputs(x_, y_);
    for (void** p : {&dx_, &dy_, &dout_}) ASSERT_EQ(cudaMalloc(p, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx_, x_.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy_, y_.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    // The copies above may still be landing (pageable source); the green streams do not wait for
    // the legacy stream.
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    poison_floats(dout_, kCount);
  }

  /// Binds the device buffers to `method` (the program's I/O is not memory-planned).
  void bind_device_io(etr::Method& method) {
    const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
    tx_ = from_blob(dx_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
    ty_ = from_blob(dy_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
    ASSERT_EQ(method.set_input(etr::EValue(*tx_), 0), Error::Ok) << captured_log();
    ASSERT_EQ(method.set_input(etr::EValue(*ty_), 1), Error::Ok) << captured_log();
    ASSERT_EQ(method.set_output_data_ptr(dout_, kBytes, 0), Error::Ok) << captured_log();
  }

  /// Partitions and device I/O made, then program "elementwise_device" loaded with the
  /// application's own memory (direct_) and its method (method_) bound to the device buffers.
  void load_device_method() {
    make_partitions();
    make_device_io();
    ASSERT_EQ(direct_.load_program("elementwise_device"), Error::Ok);
    auto method = direct_.load_method();
    ASSERT_TRUE(method.ok()) << captured_log();
    method_.emplace(std::move(method.get()));
    bind_device_io(*method_);
  }

  std::vector<float> download_output() {
    std::vector<float> out(kCount);
    EXPECT_EQ(cudaMemcpy(out.data(), dout_, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  void TearDown() override {
    method_.reset();  // before the buffers it is bound to
    for (void* p : {dx_, dy_, dout_}) {
      if (p != nullptr) cudaFree(p);  // test teardown, outside any execute
    }
  }

  RecordingFactory factory_;
  std::vector<green::Partition> partitions_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t remainder_stream_ = nullptr;
  std::vector<float> x_, y_;
  void* dx_ = nullptr;
  void* dy_ = nullptr;
  void* dout_ = nullptr;
  ::executorch::extension::TensorPtr tx_, ty_;
  DirectMethod direct_;
  std::optional<etr::Method> method_;  ///< destroyed before the program and memory of direct_
};

// (a) No guard, host I/O: ordered after cudaStreamPerThread (the engine gets a stream object, never a
// default-stream handle); the outputs are ready when forward returns.
TEST_F(ExecuTorchGpu, NoGuardHostIoOutputsReadyOnReturn) {
  Module module(program_path("elementwise"));
  std::vector<float> x, y;
  fill_inputs(x, y);
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
  ASSERT_TRUE(outputs.ok()) << captured_log();
  ASSERT_EQ(outputs->size(), 1u);
  const auto& out = outputs->at(0).toTensor();
  ASSERT_EQ(out.numel(), static_cast<ssize_t>(kCount));
  expect_elementwise(out.const_data_ptr<float>(), x, y, kCount);  // no synchronization by the test
  ASSERT_NE(engine(), nullptr);
  EXPECT_TRUE(is_stream_object(engine()->last_stream())) << "the engine got a default-stream handle";
  EXPECT_EQ(engine()->enqueue_count(), 1u);
}

// (a') A smaller input within the profile: the backend resizes the output through ExecuTorch.
TEST_F(ExecuTorchGpu, NoGuardDynamicShapeResizesTheOutput) {
  Module module(program_path("elementwise"));
  std::vector<float> x, y;
  fill_inputs(x, y);
  auto tx = from_blob(x.data(), {2, 16});
  auto ty = from_blob(y.data(), {2, 16});
  auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
  ASSERT_TRUE(outputs.ok()) << captured_log();
  const auto& out = outputs->at(0).toTensor();
  ASSERT_EQ(out.dim(), 2);
  EXPECT_EQ(out.size(0), 2);
  EXPECT_EQ(out.size(1), 16);
  expect_elementwise(out.const_data_ptr<float>(), x, y, 32);
}

// An engine with two optimization profiles: each call runs on the one its input shapes choose.
TEST_F(ExecuTorchGpu, TheShapesOfEachCallChooseTheOptimizationProfile) {
  Module module(program_path("elementwise_profiles"));
  std::vector<float> x, y;
  float* last_out = nullptr;  // the planned output memory, poisoned before each later call
  std::size_t last_count = 0;
  int call = 0;
  for (const std::int32_t rows : {2, 32, 8, 9, 2}) {
    fill_elementwise_inputs(x, y, kCount, call++);
    if (last_out != nullptr) poison_floats(last_out, last_count);
    auto tx = from_blob(x.data(), {rows, 16});
    auto ty = from_blob(y.data(), {rows, 16});
    auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
    ASSERT_TRUE(outputs.ok()) << rows << " rows: " << captured_log();
    auto& out = outputs->at(0).toTensor();
    expect_elementwise(out.const_data_ptr<float>(), x, y, static_cast<std::size_t>(rows) * 16);
    last_out = out.mutable_data_ptr<float>();
    last_count = static_cast<std::size_t>(out.numel());
    ASSERT_NE(engine(), nullptr);
    EXPECT_EQ(engine()->selected_profile(), rows <= 8 ? 0 : 1) << rows << " rows";
  }
}

// Caller misuse is reported by meaning and leaves the method usable.
TEST_F(ExecuTorchGpu, OutOfProfileInputIsInvalidArgumentAndTheMethodStaysUsable) {
  Module module(program_path("elementwise"));
  std::vector<float> x, y;
  fill_inputs(x, y);
  auto bad_x = from_blob(x.data(), {2, 2});  // 2 columns: below the profile's minimum of 4
  auto bad_y = from_blob(y.data(), {2, 2});
  auto failed = module.forward(std::vector<etr::EValue>{etr::EValue(*bad_x), etr::EValue(*bad_y)});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), Error::InvalidArgument);
  EXPECT_NE(captured_log().find("outside the engine's profile"), std::string::npos) << captured_log();
  fill_elementwise_inputs(x, y, kCount, 1);  // other values than the refused call's
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
  ASSERT_TRUE(outputs.ok()) << captured_log();
  expect_elementwise(outputs->at(0).toTensor().const_data_ptr<float>(), x, y, kCount);
}

// (b) A guard on a green-context stream, device-resident I/O: execute returns while the engine
// still runs; the outputs are right once the caller synchronizes; the engine ran only on the
// partition's SMs.
TEST_F(ExecuTorchGpu, GuardOnGreenStreamDeviceIoReturnsBeforeTheEngineFinishes) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(load_device_method());
  ASSERT_NE(engine(), nullptr);
  ASSERT_TRUE(engine()->records_sms());
  TRTET_ASSERT_OK(engine()->clear_recorded_sms());

  cudaError_t after_return = cudaSuccess;
  const auto start = std::chrono::steady_clock::now();
  {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_EQ(method_->execute(), Error::Ok) << captured_log();
    after_return = cudaStreamQuery(stream_);
  }
  const auto returned_after = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(after_return, cudaErrorNotReady) << "execute waited for the engine (a 20 ms kernel)";
  std::printf("execute returned after %.3f ms; the engine's kernel spins 20 ms\n",
              std::chrono::duration<double, std::milli>(returned_after).count());
  EXPECT_EQ(engine()->last_stream(), stream_);

  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto out = download_output();
  expect_elementwise(out.data(), x_, y_, kCount);

  auto sms = engine()->recorded_sms();
  ASSERT_TRUE(sms.ok()) << sms.status().to_string();
  auto remainder_sms = green::probe_sms(remainder_stream_);
  ASSERT_TRUE(remainder_sms.ok()) << remainder_sms.status().to_string();
  std::printf("engine ran on %zu SMs of a %u-SM partition; the remainder holds %zu\n", sms->size(),
              partitions_[0].granted_sms(), remainder_sms->size());
  EXPECT_GT(sms->size(), 0u);
  EXPECT_LE(sms->size(), partitions_[0].granted_sms());
  EXPECT_EQ(green::shared_sms(*sms, *remainder_sms), 0u) << "an engine kernel ran outside the partition";
}

// (c) A guard with host-backed I/O (the program's planned memory is host memory): staged through
// pinned buffers on the caller's stream; forward returns with the host outputs written.
TEST_F(ExecuTorchGpu, GuardWithHostBackedIoReturnsWithHostOutputsWritten) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  make_partitions();
  Module module(program_path("elementwise"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  std::vector<float> x, y;
  fill_inputs(x, y);
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  auto forward_under_guard = [&] {
    ex::CudaStreamGuard guard(stream_);
    return module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
  };
  auto outputs = forward_under_guard();
  ASSERT_TRUE(outputs.ok()) << captured_log();
  expect_elementwise(outputs->at(0).toTensor().const_data_ptr<float>(), x, y, kCount);  // no sync
  ASSERT_NE(engine(), nullptr);
  EXPECT_EQ(engine()->last_stream(), stream_);
}

// README's usage snippet, compiled as written (extract_readme_usage.cmake), on a green stream.
cudaStream_t g_readme_stream = nullptr;

TEST_F(ExecuTorchGpu, ReadmeUsageRunsAsWritten) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(load_device_method());
  g_readme_stream = stream_;
  trtet_readme_usage(&*method_);
  EXPECT_EQ(captured_log().find("TensorRTBackend execute"), std::string::npos) << captured_log();
  ASSERT_NE(engine(), nullptr);
  EXPECT_EQ(engine()->enqueue_count(), 1u);
  EXPECT_EQ(engine()->last_stream(), stream_);
  expect_elementwise(download_output().data(), x_, y_, kCount);  // the snippet synchronized the stream
}

}  // namespace
}  // namespace trtet_test

cudaStream_t trtet_readme_stream() { return trtet_test::g_readme_stream; }
