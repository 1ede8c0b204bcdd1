// TRTET_SMALL_COPIES=engines on a GPU (Note [small copies] in src/staging/small_copy.cu): every
// chunk takes the copy engines, the small ones too, and the bytes still land. Its own program,
// because the process reads the variable once: each test sets it before anything reads it (ctest
// runs each test in a process of its own).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <vector>

#include "common/gpu.h"
#include "cuda/event.h"
#include "cuda/pinned_buffer.h"
#include "staging/chunked_copy.h"
#include "staging/layout.h"
#include "staging/small_copy.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

TEST(SmallCopiesSettingGpu, EnginesSendsEveryChunkToTheCopyEnginesAndTheBytesLand) {
  ASSERT_EQ(setenv("TRTET_SMALL_COPIES", "engines", 1), 0);
  TRTET_REQUIRE_GPU();
  EXPECT_FALSE(kernel_copies_on_current_device());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr std::size_t kBytes = 4096;
  auto sent = cuda::PinnedBuffer::allocate(kBytes);
  auto received = cuda::PinnedBuffer::allocate(kBytes);
  auto landed = cuda::Event::create();
  TRTET_ASSERT_OK(sent);
  TRTET_ASSERT_OK(received);
  TRTET_ASSERT_OK(landed);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
  std::vector<unsigned char> in(kBytes), out(kBytes, 0);
  for (std::size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 29 + 5);
  // As a partition's stream would have them: the setting alone decides.
  ContiguousChunks into(static_cast<unsigned char*>(sent->data()), nullptr, /*on_partition=*/true);
  ContiguousChunks back(static_cast<unsigned char*>(received->data()), &*landed, /*on_partition=*/true);
  ASSERT_TRUE(into.small_by_kernel()) << "these chunks may take the copy kernel; the setting says no";
  ChunkedCopy copies;
  TRTET_ASSERT_OK(copies.send(static_cast<unsigned char*>(device), in.data(), kBytes, stream, into));
  TRTET_ASSERT_OK(copies.queue_receive(out.data(), static_cast<unsigned char*>(device), kBytes, stream, back));
  TRTET_ASSERT_OK(copies.finish_receives());
  EXPECT_EQ(out, in);
  EXPECT_EQ(copies.kernel_transfers(), 0u);
  EXPECT_EQ(copies.engine_transfers(), 2u);
  cudaFree(device);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
