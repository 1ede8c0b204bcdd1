// One stream selection for every CUDA delegate (Note [Shared caller stream] in
// src/stream/caller_stream.cpp): with ExecuTorch's CUDA stream extension, CudaStreamGuard and
// ExecuTorch's CallerStreamGuard are the same selection. No device needed.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#if __has_include(<executorch/extension/cuda/caller_stream.h>)
#include <executorch/extension/cuda/caller_stream.h>
#define TRTET_TEST_HAS_EXECUTORCH_CALLER_STREAM 1
#else
#define TRTET_TEST_HAS_EXECUTORCH_CALLER_STREAM 0
#endif

namespace torch_tensorrt::executorch_backend {
namespace {

#if TRTET_TEST_HAS_EXECUTORCH_CALLER_STREAM
cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(n * 0x100); }

namespace etc = ::executorch::extension::cuda;

TEST(SharedCallerStream, OurGuardSelectsForExecuTorchsCudaDelegates) {
  EXPECT_FALSE(etc::getCallerStream().has_value());
  {
    CudaStreamGuard guard(fake_stream(1));
    ASSERT_TRUE(etc::getCallerStream().has_value());
    EXPECT_EQ(*etc::getCallerStream(), fake_stream(1));
  }
  EXPECT_FALSE(etc::getCallerStream().has_value());
}

TEST(SharedCallerStream, ExecuTorchsGuardSelectsForThisDelegate) {
  {
    etc::CallerStreamGuard guard(fake_stream(2));
    ASSERT_TRUE(caller_stream().has_value());
    EXPECT_EQ(*caller_stream(), fake_stream(2));
  }
  EXPECT_FALSE(caller_stream().has_value());
}

TEST(SharedCallerStream, GuardsOfBothKindsNestAndRestore) {
  CudaStreamGuard outer(fake_stream(1));
  {
    etc::CallerStreamGuard middle(fake_stream(2));
    EXPECT_EQ(*caller_stream(), fake_stream(2));
    {
      CudaStreamGuard inner(kNullStream);
      EXPECT_EQ(etc::getCallerStream(), std::optional<cudaStream_t>(nullptr));
      EXPECT_EQ(caller_stream(), std::optional<cudaStream_t>(nullptr));
    }
    EXPECT_EQ(*etc::getCallerStream(), fake_stream(2));
  }
  EXPECT_EQ(*caller_stream(), fake_stream(1));
  EXPECT_EQ(*etc::getCallerStream(), fake_stream(1));
}

TEST(SharedCallerStream, StillPerThread) {
  CudaStreamGuard guard(fake_stream(7));
  std::optional<cudaStream_t> seen = fake_stream(99);
  std::thread other([&] { seen = etc::getCallerStream(); });
  other.join();
  EXPECT_FALSE(seen.has_value());
}
#else
TEST(SharedCallerStream, ThisExecuTorchHasNoCudaStreamExtension) {
  GTEST_SKIP() << "this ExecuTorch ships no executorch/extension/cuda/caller_stream.h (PyPI's CPU wheel): "
                  "CudaStreamGuard keeps its own selection (tests/stream); build with "
                  "scripts/install-executorch --cuda-extension-from <executorch sources> to test the shared path";
}
#endif

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
