// A small chunk's transfer after a sticky CUDA error (Note [small copies] in
// src/staging/small_copy.cu): the copy kernel's launch fails, and the transfer returns an error that
// names the launch and CUDA's cause, at once. A program of its own: the error leaves the process's
// context unusable.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "cuda/pinned_buffer.h"
#include "staging/chunked_copy.h"
#include "staging/small_copy.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

__global__ void write_through_null(int* nowhere) { *nowhere = 1; }

TEST(SmallCopiesStickyGpu, ATransferAfterAStickyErrorFailsAtOnceNamingTheLaunchAndTheCause) {
  TRTET_REQUIRE_GPU();
  if (!kernel_copies_on_current_device()) GTEST_SKIP() << "small copies take the copy engines on this device";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr std::size_t kBytes = 4096;
  auto staging = cuda::PinnedBuffer::allocate(kBytes);
  TRTET_ASSERT_OK(staging);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
  std::vector<unsigned char> in(kBytes, 7);
  ContiguousChunks chunks(static_cast<unsigned char*>(staging->data()), nullptr, /*on_partition=*/true);
  ChunkedCopy copies;
  TRTET_ASSERT_OK(copies.send(static_cast<unsigned char*>(device), in.data(), kBytes, stream, chunks));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(copies.kernel_transfers(), 1u) << "the premise: a 4 KiB chunk takes the copy kernel";

  write_through_null<<<1, 1, 0, stream>>>(nullptr);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaErrorIllegalAddress) << "the premise: a sticky error";

  const auto start = std::chrono::steady_clock::now();
  const Status sent = copies.send(static_cast<unsigned char*>(device), in.data(), kBytes, stream, chunks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(sent.ok()) << "a transfer after a sticky error succeeded";
  EXPECT_NE(sent.to_string().find("copy_kernel"), std::string::npos) << sent.to_string();
  EXPECT_NE(sent.to_string().find("illegal memory access"), std::string::npos) << sent.to_string();
  EXPECT_LT(seconds, 1.0) << "the failed transfer took " << seconds << " s";
  EXPECT_EQ(copies.kernel_transfers(), 1u) << "a failed launch is not counted as a transfer";
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
