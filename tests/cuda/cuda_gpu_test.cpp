// GPU tests of the cuda layer: stream facts on real, per-thread and green-context streams;
// owners that allocate; the device guard.
#include <gtest/gtest.h>

#include <cuda.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_buffer.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/pinned_buffer.h"
#include "cuda/stream_facts.h"

namespace torch_tensorrt::executorch_backend::cuda {
namespace {

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override { TRTET_REQUIRE_GPU(); }
};

TEST_F(CudaGpu, FactsOfCreatedStream) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  auto facts = stream_facts(stream);
  TRTET_ASSERT_OK(facts);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(facts->device, current);
  EXPECT_EQ(facts->green_context, nullptr);
  EXPECT_FALSE(facts->capturing);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(CudaGpu, FactsOfPerThreadStream) {
  auto facts = stream_facts(cudaStreamPerThread);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->device, 0);
  EXPECT_EQ(facts->green_context, nullptr);
  EXPECT_FALSE(facts->capturing);
}

TEST_F(CudaGpu, FactsOfGreenContextStream) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  auto api_or = driver();
  TRTET_ASSERT_OK(api_or);
  const DriverApi& api = **api_or;
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // test-only: initialise the primary context
  CUdevice dev = 0;
  ASSERT_EQ(api.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUdevResource sms{};
  ASSERT_EQ(api.cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  CUdevResource group{};
  CUdevResource rest{};
  unsigned int groups = 1;
  ASSERT_EQ(api.cuDevSmResourceSplitByCount(&group, &groups, &sms, &rest, 0, 16), CUDA_SUCCESS);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(api.cuDevResourceGenerateDesc(&desc, &group, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(api.cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);

  auto facts = stream_facts(reinterpret_cast<cudaStream_t>(stream));
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->device, 0);
  EXPECT_EQ(facts->green_context, green);
  EXPECT_FALSE(facts->capturing);

  ASSERT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGreenCtxDestroy(green), CUDA_SUCCESS);
}

TEST_F(CudaGpu, CaptureStatusTrueOnlyInsideCapture) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  auto before = stream_is_capturing(stream);
  TRTET_ASSERT_OK(before);
  EXPECT_FALSE(*before);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  auto during = stream_is_capturing(stream);
  TRTET_ASSERT_OK(during);
  EXPECT_TRUE(*during);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  auto after = stream_is_capturing(stream);
  TRTET_ASSERT_OK(after);
  EXPECT_FALSE(*after);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(CudaGpu, BuffersAndEventRoundTrip) {
  cudaStream_t stream = cudaStreamPerThread;
  auto host = PinnedBuffer::allocate(1 << 20);
  TRTET_ASSERT_OK(host);
  auto dev = DeviceBuffer::allocate(1 << 20, stream);
  TRTET_ASSERT_OK(dev);
  auto* bytes = static_cast<unsigned char*>(host->data());
  for (int i = 0; i < (1 << 20); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(cudaMemcpyAsync(dev->data(), host->data(), 1 << 20, cudaMemcpyHostToDevice, stream), cudaSuccess);
  auto back = PinnedBuffer::allocate(1 << 20);
  TRTET_ASSERT_OK(back);
  ASSERT_EQ(cudaMemcpyAsync(back->data(), dev->data(), 1 << 20, cudaMemcpyDeviceToHost, stream), cudaSuccess);
  auto done = Event::create();
  TRTET_ASSERT_OK(done);
  TRTET_ASSERT_OK(done->record(stream));
  TRTET_ASSERT_OK(done->synchronize());
  auto q = done->query();
  TRTET_ASSERT_OK(q);
  EXPECT_TRUE(*q);
  EXPECT_EQ(std::memcmp(back->data(), host->data(), 1 << 20), 0);
  DeviceBuffer moved = std::move(dev).value();
  EXPECT_TRUE(moved);
  moved.reset();
  EXPECT_FALSE(moved);
}

TEST_F(CudaGpu, WarnClearsStickyError) {
  const cudaError_t error = cudaSetDevice(1 << 20);  // records a real last error
  ASSERT_NE(error, cudaSuccess);
  TRTET_CUDA_WARN(error);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST_F(CudaGpu, DeviceGuardRestores) {
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  {
    DeviceGuard guard(before);
    TRTET_EXPECT_OK(guard.status());
  }
  {
    DeviceGuard bad(1 << 20);
    EXPECT_FALSE(bad.status().ok());
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
  EXPECT_EQ(check_device_index(-1).code(), ErrorCode::kInvalidArgument);
  TRTET_EXPECT_OK(check_device_index(0));
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::cuda
