// Programs of today's export shapes through ExecuTorch's Module on a GPU (docs/DESIGN.md,
// "Device-planned programs"): arenas planned on the GPU with et_copy boundary copies around the
// delegate, the same with the copies skipped (device I/O), CPU operators around the delegate, and
// bad arenas. The test engine spins 2 ms per call, so a copy out that does not wait for it reads
// the previous call's output; every call gets fresh inputs, and each output is poisoned once
// checked, so the next call's shows whether it was written. Label gpu: skips without a GPU.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/device_allocator.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "common/memory.h"
#include "common/stream_gpu_test.h"
#include "boundary/boundary_transfers.h"
#include "engines/cuda_test_engine.h"
#include "backend/cuda_allocator.h"
#include "executorch/module_test_support.h"
#include "green/probe.h"
#include "green/split.h"

namespace trtet_test {
namespace {

namespace green = ex::green;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;  // 1 MiB of float32 per tensor

/// Inputs that differ from one call to the next (`call`), so a stale output shows.
void fill_inputs(std::vector<float>& x, std::vector<float>& y, int call, std::size_t count = kCount) {
  fill_elementwise_inputs(x, y, count, call);
}

/// Fills an output tensor's memory (host or device) with kPoison, so that the next call, which
/// should write it (planned memory keeps its address from call to call), shows when it did not.
void poison_output(const etr::etensor::Tensor& out) {
  poison_floats(const_cast<void*>(out.const_data_ptr()), static_cast<std::size_t>(out.numel()));
}

/// cpu_ops_around: a = x + x on the CPU, the engine's 2a - 0.5y on the GPU, then + y on the CPU.
float cpu_ops_expected(float x, float y) { return elementwise_expected(x + x, y) + y; }

/// The index of the first wrong element, or -1.
long first_wrong(const float* out, const std::vector<float>& x, const std::vector<float>& y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] != elementwise_expected(x[i], y[i])) return static_cast<long>(i);
  }
  return -1;
}

class DevicePlannedGpu : public ModuleGpuTest {
 protected:
  void SetUp() override {
    ModuleGpuTest::SetUp();
    if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
    auto transfers = ex::boundary::BoundaryTransfers::of_device(0);
    TRTET_ASSERT_OK(transfers);
    transfers_ = *transfers;
  }

  CudaTestEngine* engine() { return dynamic_cast<CudaTestEngine*>(factory_.last_engine()); }

  /// Partitions of `counts` SMs (and the remainder), one stream each.
  void make_partitions(std::vector<unsigned> counts) {
    auto partitions = green::split_device(0, green::SplitRequest::counts(counts, /*remainder=*/true));
    ASSERT_TRUE(partitions.ok()) << partitions.status().to_string();
    partitions_ = std::move(partitions).value();
    for (auto& partition : partitions_) {
      auto stream = partition.context.make_stream();
      ASSERT_TRUE(stream.ok()) << stream.status().to_string();
      streams_.push_back(*stream);
    }
  }

  /// forward() on fresh inputs of `rows` x kCols; checks the output before any synchronization.
  void forward_and_check(Module& module, int call, int rows = kRows) {
    std::vector<float> x, y;
    const std::size_t count = static_cast<std::size_t>(rows) * kCols;
    fill_inputs(x, y, call, count);
    auto tx = from_blob(x.data(), {rows, kCols});
    auto ty = from_blob(y.data(), {rows, kCols});
    auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
    ASSERT_TRUE(outputs.ok()) << "call " << call << ": " << captured_log();
    ASSERT_EQ(outputs->size(), 1u);
    const auto& out = outputs->at(0).toTensor();
    ASSERT_EQ(static_cast<std::size_t>(out.numel()), count);
    EXPECT_EQ(out.device_type(), ::executorch::runtime::etensor::DeviceType::CPU);
    EXPECT_EQ(first_wrong(out.const_data_ptr<float>(), x, y, count), -1)
        << "call " << call << ": the output was read before the engine finished";
    poison_output(out);  // for the next call
  }

  RecordingFactory factory_;
  ex::boundary::BoundaryTransfers* transfers_ = nullptr;
  std::vector<green::Partition> partitions_;
  std::vector<cudaStream_t> streams_;
  cudaStream_t own_ = nullptr;
};

TEST_F(DevicePlannedGpu, TheProjectsAllocatorServesCudaArenas) {
  EXPECT_EQ(ex::cuda_allocator_registration(), ex::CudaAllocatorRegistration::kOurs);
  EXPECT_EQ(etr::get_device_allocator(etr::etensor::DeviceType::CUDA), &ex::cuda_allocator());
}

// No guard: the copies order with cudaStreamPerThread like the delegate; host outputs on return.
TEST_F(DevicePlannedGpu, BoundaryCopiesWithoutAGuard) {
  Module module(program_path("boundary_copies"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  const auto before = transfers_->stats();
  EXPECT_GE(before.arenas, 1u) << "the CUDA-tagged arena did not come from the project's allocator";
  for (int call = 0; call < 3; ++call) ASSERT_NO_FATAL_FAILURE(forward_and_check(module, call));
  // Two copies in and one out per call, each through the pinned staging (Module's CPU arenas are pageable).
  EXPECT_EQ(transfers_->stats().staged_copies, before.staged_copies + 9);
  ASSERT_NE(engine(), nullptr);
  EXPECT_EQ(engine()->enqueue_count(), 3u);
  EXPECT_TRUE(is_stream_object(engine()->last_stream())) << "the engine got a default-stream handle";
}

// A guard on a green-context stream: the copies and the engine run on it; host outputs right on
// return (the copy out waited for the 2 ms engine by event); the engine stayed on the partition.
TEST_F(DevicePlannedGpu, BoundaryCopiesUnderAGuardOnAGreenStream) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partitions({16}));
  Module module(program_path("boundary_copies"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  ASSERT_NE(engine(), nullptr);
  ASSERT_TRUE(engine()->records_sms());
  TRTET_ASSERT_OK(engine()->clear_recorded_sms());
  for (int call = 0; call < 4; ++call) {
    ex::CudaStreamGuard guard(streams_[0]);
    ASSERT_NO_FATAL_FAILURE(forward_and_check(module, call, call % 2 == 0 ? kRows : 5));
  }
  EXPECT_EQ(engine()->last_stream(), streams_[0]);
  ASSERT_EQ(cudaStreamSynchronize(streams_[0]), cudaSuccess);
  auto sms = engine()->recorded_sms();
  ASSERT_TRUE(sms.ok()) << sms.status().to_string();
  auto remainder_sms = green::probe_sms(streams_[1]);
  ASSERT_TRUE(remainder_sms.ok()) << remainder_sms.status().to_string();
  std::printf("engine ran on %zu SMs of a %u-SM partition\n", sms->size(), partitions_[0].granted_sms());
  EXPECT_GT(sms->size(), 0u);
  EXPECT_LE(sms->size(), partitions_[0].granted_sms());
  EXPECT_EQ(green::shared_sms(*sms, *remainder_sms), 0u) << "an engine kernel ran outside the partition";
}

// Larger than a staging ring's chunk (4 MiB per tensor) and CPU operators around the delegate.
TEST_F(DevicePlannedGpu, FourMebibyteTensorsThroughTheBoundaryCopies) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partitions({32}));
  Module module(program_path("boundary_copies_4m"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  for (int call = 0; call < 3; ++call) {
    std::vector<float> x, y;
    const std::size_t count = std::size_t{1024} * 1024;
    fill_inputs(x, y, call, count);
    auto tx = from_blob(x.data(), {1024, 1024});
    auto ty = from_blob(y.data(), {1024, 1024});
    ex::CudaStreamGuard guard(streams_[0]);
    auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
    ASSERT_TRUE(outputs.ok()) << captured_log();
    EXPECT_EQ(first_wrong(outputs->at(0).toTensor().const_data_ptr<float>(), x, y, count), -1) << "call " << call;
    poison_output(outputs->at(0).toTensor());  // for the next call
  }
}

// Skipped copies: the caller passes device tensors and the output stays in the CUDA arena; execute
// under a guard returns while the engine runs, the output is right once the caller synchronizes,
// and nothing was copied at the boundary.
TEST_F(DevicePlannedGpu, SkippedCopiesDeviceIoReturnsAtOnce) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  ASSERT_EQ(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking), cudaSuccess);
  Module module(program_path("skipped_copies"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  const std::size_t bytes = kCount * sizeof(float);
  void* dx = nullptr;
  void* dy = nullptr;
  for (void** p : {&dx, &dy}) ASSERT_EQ(cudaMalloc(p, bytes), cudaSuccess);
  const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
  auto tx = from_blob(dx, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto ty = from_blob(dy, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  const auto before = transfers_->stats();
  for (int call = 0; call < 3; ++call) {
    std::vector<float> x, y;
    fill_inputs(x, y, call);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // test setup, outside any execute
    cudaError_t after_return = cudaSuccess;
    const void* out_data = nullptr;
    {
      ex::CudaStreamGuard guard(own_);
      auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
      after_return = cudaStreamQuery(own_);
      ASSERT_TRUE(outputs.ok()) << captured_log();
      const auto& out = outputs->at(0).toTensor();
      EXPECT_EQ(out.device_type(), ::executorch::runtime::etensor::DeviceType::CUDA);
      out_data = out.const_data_ptr();
    }
    EXPECT_EQ(after_return, cudaErrorNotReady) << "execute waited for the engine";
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, out_data), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice) << "the output is not in device memory";
    ASSERT_EQ(cudaStreamSynchronize(own_), cudaSuccess);
    std::vector<float> out(kCount);
    ASSERT_EQ(cudaMemcpy(out.data(), out_data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(first_wrong(out.data(), x, y, kCount), -1) << "call " << call;
    poison_floats(const_cast<void*>(out_data), kCount);  // for the next call
  }
  EXPECT_EQ(transfers_->stats().staged_copies, before.staged_copies);
  EXPECT_EQ(transfers_->stats().direct_copies, before.direct_copies);
  for (void* p : {dx, dy}) cudaFree(p);
  cudaStreamDestroy(own_);
  own_ = nullptr;
}

// A tensor the program places on the GPU but whose memory is the host's: refused before any work
// (the engine would write host memory through a device address), and the next call works.
TEST_F(DevicePlannedGpu, HostMemoryInADeviceTensorIsRefused) {
  Module module(program_path("skipped_copies"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  std::vector<float> x, y;
  fill_inputs(x, y, 0);
  const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
  auto host_x = from_blob(x.data(), {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto host_y = from_blob(y.data(), {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  clear_log();
  auto refused = module.forward(std::vector<etr::EValue>{etr::EValue(*host_x), etr::EValue(*host_y)});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), Error::InvalidArgument);
  EXPECT_NE(captured_log().find("places on the GPU holds pageable host memory"), std::string::npos) << captured_log();
  ASSERT_NE(engine(), nullptr);
  EXPECT_EQ(engine()->enqueue_count(), 0u) << "the refused call enqueued the engine";
  const std::size_t bytes = kCount * sizeof(float);
  void* dx = nullptr;
  void* dy = nullptr;
  for (void** p : {&dx, &dy}) ASSERT_EQ(cudaMalloc(p, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // test setup, outside any execute
  auto tx = from_blob(dx, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto ty = from_blob(dy, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
  ASSERT_TRUE(outputs.ok()) << captured_log();
  std::vector<float> out(kCount);
  ASSERT_EQ(cudaMemcpy(out.data(), outputs->at(0).toTensor().const_data_ptr(), bytes, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(first_wrong(out.data(), x, y, kCount), -1);
  for (void* p : {dx, dy}) cudaFree(p);
}

// Two threads, each with its own program on its own partition, calls overlapping.
TEST_F(DevicePlannedGpu, TwoThreadsOnTwoPartitions) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partitions({16, 16}));
  Module first(program_path("boundary_copies"));
  Module second(program_path("cpu_ops_around"));
  ASSERT_EQ(first.load_method("forward"), Error::Ok) << captured_log();
  ASSERT_EQ(second.load_method("forward"), Error::Ok) << captured_log();
  std::vector<std::string> failures(2);
  auto run = [&](int which, Module& module) {
    cudaSetDevice(0);
    for (int call = 0; call < 10; ++call) {
      std::vector<float> x, y;
      fill_inputs(x, y, 100 * which + call);
      auto tx = from_blob(x.data(), {kRows, kCols});
      auto ty = from_blob(y.data(), {kRows, kCols});
      ex::CudaStreamGuard guard(streams_[static_cast<std::size_t>(which)]);
      auto outputs = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
      if (!outputs.ok()) {
        failures[static_cast<std::size_t>(which)] = "call failed";
        return;
      }
      const float* out = outputs->at(0).toTensor().const_data_ptr<float>();
      for (std::size_t i = 0; i < kCount; ++i) {
        const float want = which == 0 ? elementwise_expected(x[i], y[i]) : cpu_ops_expected(x[i], y[i]);
        if (out[i] != want) {
          failures[static_cast<std::size_t>(which)] =
              "call " + std::to_string(call) + " element " + std::to_string(i) + ": " + std::to_string(out[i]) +
              " != " + std::to_string(want);
          return;
        }
      }
      poison_output(outputs->at(0).toTensor());  // for the next call
    }
  };
  std::thread a(run, 0, std::ref(first));
  std::thread b(run, 1, std::ref(second));
  a.join();
  b.join();
  EXPECT_EQ(failures[0], "") << captured_log();
  EXPECT_EQ(failures[1], "") << captured_log();
}

// A caller's capture: boundary copies from Module's pageable CPU arenas cannot be captured; the call
// says so, and the capture stays valid. Device I/O (skipped copies) is captured and replays.
TEST_F(DevicePlannedGpu, CapturesTakeWhatTheCopiesAllow) {
  ASSERT_EQ(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking), cudaSuccess);
  Module module(program_path("boundary_copies"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  std::vector<float> x, y;
  fill_inputs(x, y, 1);
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  ASSERT_EQ(module.set_inputs(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)}), Error::Ok);
  cudaGraph_t graph = nullptr;
  {
    ex::CudaStreamGuard guard(own_);
    ASSERT_EQ(cudaStreamBeginCapture(own_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    clear_log();
    auto refused = module.execute("forward");
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(captured_log().find("captured into a CUDA graph"), std::string::npos) << captured_log();
    EXPECT_EQ(cudaStreamEndCapture(own_, &graph), cudaSuccess) << "the refusal invalidated the capture";
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  // The next eager call works.
  {
    ex::CudaStreamGuard guard(own_);
    ASSERT_NO_FATAL_FAILURE(forward_and_check(module, 2));
  }

  Module device_io(program_path("skipped_copies"));
  ASSERT_EQ(device_io.load_method("forward"), Error::Ok) << captured_log();
  const std::size_t bytes = kCount * sizeof(float);
  void* dx = nullptr;
  void* dy = nullptr;
  for (void** p : {&dx, &dy}) ASSERT_EQ(cudaMalloc(p, bytes), cudaSuccess);
  const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
  auto dtx = from_blob(dx, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto dty = from_blob(dy, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  ASSERT_EQ(device_io.set_inputs(std::vector<etr::EValue>{etr::EValue(*dtx), etr::EValue(*dty)}), Error::Ok);
  const void* dout = nullptr;
  {
    ex::CudaStreamGuard guard(own_);
    ASSERT_EQ(cudaStreamBeginCapture(own_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    auto captured = device_io.execute("forward");
    EXPECT_TRUE(captured.ok()) << captured_log();
    if (captured.ok()) dout = captured->at(0).toTensor().const_data_ptr();
    ASSERT_EQ(cudaStreamEndCapture(own_, &graph), cudaSuccess);
  }
  ASSERT_NE(dout, nullptr);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    fill_inputs(x, y, 10 + replay);
    poison_floats(const_cast<void*>(dout), kCount);
    ASSERT_EQ(cudaMemcpyAsync(dx, x.data(), bytes, cudaMemcpyHostToDevice, own_), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(dy, y.data(), bytes, cudaMemcpyHostToDevice, own_), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, own_), cudaSuccess);
    std::vector<float> out(kCount);
    ASSERT_EQ(cudaMemcpyAsync(out.data(), dout, bytes, cudaMemcpyDeviceToHost, own_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(own_), cudaSuccess);
    EXPECT_EQ(first_wrong(out.data(), x, y, kCount), -1) << "replay " << replay;
  }
  // Eager calls after the capture.
  {
    fill_inputs(x, y, 20);
    poison_floats(const_cast<void*>(dout), kCount);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ex::CudaStreamGuard guard(own_);
    auto outputs = device_io.forward(std::vector<etr::EValue>{etr::EValue(*dtx), etr::EValue(*dty)});
    ASSERT_TRUE(outputs.ok()) << captured_log();
    ASSERT_EQ(cudaStreamSynchronize(own_), cudaSuccess);
    std::vector<float> out(kCount);
    ASSERT_EQ(cudaMemcpy(out.data(), outputs->at(0).toTensor().const_data_ptr(), bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(first_wrong(out.data(), x, y, kCount), -1) << "eager call after the capture";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (void* p : {dx, dy}) cudaFree(p);
  cudaStreamDestroy(own_);
  own_ = nullptr;
}

// An arena tagged with a device this machine does not have: the load fails with the reason, and
// the next program loads and runs.
TEST_F(DevicePlannedGpu, AnArenaOnAMissingDeviceFailsTheLoadAndTheNextProgramRuns) {
  const auto before = transfers_->stats();
  {
    Module bad(program_path("bad_device_arena"));
    clear_log();
    EXPECT_NE(bad.load_method("forward"), Error::Ok);
    EXPECT_NE(captured_log().find("cuda:7"), std::string::npos) << captured_log();
  }
  EXPECT_EQ(transfers_->stats().arenas, before.arenas) << "an arena leaked";
  Module module(program_path("boundary_copies"));
  ASSERT_NO_FATAL_FAILURE(forward_and_check(module, 0));
}

// An arena tagged cuda:1 lives on device 1 (two GPUs).
TEST_F(DevicePlannedGpu, AnArenaTaggedCuda1LivesOnDevice1) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << count;
  auto second = ex::boundary::BoundaryTransfers::of_device(1);
  TRTET_ASSERT_OK(second);
  const auto before = (*second)->stats();
  Module module(program_path("boundary_copies_cuda1"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  EXPECT_GT((*second)->stats().arenas, before.arenas) << "no arena was made on device 1";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  {
    ex::CudaStreamGuard guard(stream);
    ASSERT_NO_FATAL_FAILURE(forward_and_check(module, 0));
  }
  cudaStreamDestroy(stream);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
}  // namespace trtet_test
