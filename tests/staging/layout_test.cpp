// The staging layout's pure rules (staging/layout.h), without a GPU: pageable chunks and
// slices, and the staging slot each call takes.
#include "staging/layout.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace torch_tensorrt::executorch_backend::staging {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(ChunkBytes, AtLeastOneMiBAndAWholeNumberOfSlices) {
  for (const std::size_t bytes : {std::size_t{1}, kCopySlice - 1, kCopySlice, kCopySlice + 1, kMiB - 1, kMiB,
                                  kMiB + 1, 4 * kMiB, 16 * kMiB + 4, 64 * kMiB, 64 * kMiB + 3, 100 * kMiB + 7,
                                  std::size_t{1} << 40}) {
    const std::size_t chunk = chunk_bytes(bytes);
    EXPECT_GE(chunk, kMinChunk) << bytes;
    EXPECT_EQ(chunk % kCopySlice, 0u) << bytes;
    EXPECT_EQ(chunk % slice_bytes(chunk), 0u) << bytes << ": the input loop steps chunks in whole slices";
    const std::size_t chunks = bytes / chunk + (bytes % chunk != 0 ? 1 : 0);
    EXPECT_LE(chunks, kMaxChunks) << bytes;
  }
}

TEST(ChunkBytes, SmallTensorsTakeOneMiBChunksLargeOnesSixteenChunks) {
  EXPECT_EQ(chunk_bytes(4 * kMiB), kMiB);        // 4 chunks: the transfer of one overlaps the copy of the next
  EXPECT_EQ(chunk_bytes(16 * kMiB), kMiB);
  EXPECT_EQ(chunk_bytes(64 * kMiB), 4 * kMiB);   // 16 chunks
  EXPECT_EQ(chunk_bytes(64 * kMiB + 1), 4 * kMiB + kCopySlice);
}

TEST(ChunkBytes, DoesNotOverflowForTheLargestSizes) {
  const std::size_t huge = SIZE_MAX - 5;
  const std::size_t chunk = chunk_bytes(huge);
  EXPECT_GE(chunk, huge / kMaxChunks);
  EXPECT_EQ(chunk % kCopySlice, 0u);
}

TEST(CopyByKernel, ChunksFromOneByteTo64KiBAndNoOthers) {
  EXPECT_FALSE(copy_by_kernel(0)) << "an empty chunk queues nothing";
  EXPECT_TRUE(copy_by_kernel(1));
  EXPECT_TRUE(copy_by_kernel(4096));
  EXPECT_TRUE(copy_by_kernel(kKernelCopyMaxBytes));
  EXPECT_EQ(kKernelCopyMaxBytes, std::size_t{64} << 10);
  EXPECT_FALSE(copy_by_kernel(kKernelCopyMaxBytes + 1));
  EXPECT_FALSE(copy_by_kernel(kMinChunk)) << "a chunk of the chunked path's smallest size takes the copy engines";
}

TEST(SliceBytes, AChunkSmallerThanASliceIsOneSlice) {
  EXPECT_EQ(slice_bytes(kMiB), kCopySlice);
  EXPECT_EQ(slice_bytes(1000), 1000u);
}

TEST(ChooseSlot, TheFirstCallTakesSlotZeroWhichABudgetMade) {
  EXPECT_EQ(choose_slot(false, false, false, 0, 2), 0);
  EXPECT_EQ(choose_slot(false, false, true, 0, 2), 0);
}

TEST(ChooseSlot, TheSameStreamKeepsItsSlotAndAnotherStreamTakesTheNext) {
  EXPECT_EQ(choose_slot(true, true, false, 1, 2), 1);
  EXPECT_EQ(choose_slot(true, false, false, 1, 2), 0);
  EXPECT_EQ(choose_slot(true, false, false, 0, 2), 1);
  EXPECT_EQ(choose_slot(true, false, false, 2, 3), 0);
}

TEST(ChooseSlot, ACaptureUsesTheSlotItsWarmUpSized) {
  // The warm-up ran on stream A (slot 1); the capture on stream B must not take slot 0, which may
  // never have been sized, because nothing can be allocated while capturing.
  EXPECT_EQ(choose_slot(true, false, true, 1, 2), 1);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
