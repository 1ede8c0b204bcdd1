// CPU tests of a staging arena's bookkeeping (staging/arena_book.h): growth in chunks, exact-size
// allocations, coalescing, the stream-ordered reuse rule and trimming. No device needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "staging/arena_book.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kChunk = 2 * kMiB;  // the H200's device granularity
using ChunkRun = ArenaBook::Run;

/// take(), growing first where nothing mapped fits, as StagingArena::allocate does.
std::size_t allocate(ArenaBook& book, std::size_t bytes, std::uint64_t stream = 0) {
  std::size_t offset = book.take(bytes, stream);
  if (offset != ArenaBook::kNone) return offset;
  const ChunkRun run = book.plan_growth(bytes);
  if (run.count == 0) return ArenaBook::kNone;
  book.add_mapped(run);
  return book.take(bytes, stream);
}

TEST(ArenaBook, OneModelOfThreeMiBMapsTwoChunksNotAPoolUnit) {
  ArenaBook book(kChunk, 64, 512, true);
  EXPECT_EQ(book.plan_growth(kMiB), (ChunkRun{0, 1}));
  EXPECT_EQ(allocate(book, kMiB), 0u);
  EXPECT_EQ(book.mapped_bytes(), kChunk);
  EXPECT_EQ(allocate(book, kMiB), kMiB) << "the second MiB fits in the first chunk";
  EXPECT_EQ(book.mapped_bytes(), kChunk);
  EXPECT_EQ(allocate(book, kMiB), 2 * kMiB) << "the third extends the range beside the first chunk";
  EXPECT_EQ(book.mapped_bytes(), 4 * kMiB);
  EXPECT_EQ(book.used_bytes(), 3 * kMiB);
  EXPECT_EQ(book.used_high_bytes(), 3 * kMiB);
  EXPECT_EQ(book.mapped_high_bytes(), 4 * kMiB);
}

TEST(ArenaBook, SixteenModelsReserveWhatTheyUse) {
  ArenaBook book(kChunk, 1024, 512, true);
  for (int tensor = 0; tensor < 16 * 3; ++tensor) ASSERT_NE(allocate(book, kMiB), ArenaBook::kNone) << tensor;
  EXPECT_EQ(book.used_bytes(), 48 * kMiB);
  EXPECT_EQ(book.mapped_bytes(), 48 * kMiB) << "1 MiB allocations pack 2 MiB chunks exactly";
}

TEST(ArenaBook, AnAllocationSpansChunksWhereTheRangeIsContiguous) {
  ArenaBook book(kChunk, 8, 512, true);
  ASSERT_EQ(allocate(book, kMiB), 0u);
  // 1 MiB free at the end of chunk 0: one more chunk makes 3 MiB in a row.
  EXPECT_EQ(book.plan_growth(3 * kMiB), (ChunkRun{1, 1}));
  EXPECT_EQ(allocate(book, 3 * kMiB), kMiB);
  EXPECT_EQ(book.mapped_bytes(), 4 * kMiB);
}

TEST(ArenaBook, SizesAreRoundedToTheAlignment) {
  ArenaBook book(kChunk, 4, 512, true);
  EXPECT_EQ(book.rounded(1), 512u);
  EXPECT_EQ(book.rounded(0), 512u) << "even an empty request takes an address of its own";
  EXPECT_EQ(book.rounded(513), 1024u);
  EXPECT_EQ(book.rounded(4 * kChunk), 4 * kChunk);
  EXPECT_EQ(book.rounded(4 * kChunk + 1), ArenaBook::kNone) << "larger than the range";
  EXPECT_EQ(book.rounded(~std::size_t{0}), ArenaBook::kNone) << "no overflow";
  const std::size_t a = allocate(book, 1);
  const std::size_t b = allocate(book, 256);
  EXPECT_EQ(b, a + 512);
  EXPECT_EQ(book.used_bytes(), 1024u);
  EXPECT_EQ(book.live_size(b), 512u);
}

TEST(ArenaBook, TheRangeFullIsNoRoomNotAnOverflow) {
  ArenaBook book(kChunk, 2, 512, true);
  ASSERT_NE(allocate(book, 3 * kMiB), ArenaBook::kNone);
  EXPECT_EQ(book.plan_growth(2 * kMiB).count, 0u);
  EXPECT_EQ(allocate(book, 2 * kMiB), ArenaBook::kNone);
  EXPECT_NE(allocate(book, kMiB), ArenaBook::kNone) << "what is left still serves";
  EXPECT_EQ(book.plan_growth(5 * kChunk).count, 0u);
}

TEST(ArenaBook, CompletedFreesCoalesceIntoOneBlock) {
  ArenaBook book(kChunk, 8, 512, true);
  const std::size_t a = allocate(book, kMiB);
  const std::size_t b = allocate(book, kMiB);
  const std::size_t c = allocate(book, 2 * kMiB);
  ASSERT_EQ(book.mapped_bytes(), 4 * kMiB);
  EXPECT_TRUE(book.give_back_now(b));
  EXPECT_TRUE(book.give_back_now(a));
  EXPECT_EQ(book.free_blocks(), 1u) << "a and b are neighbours";
  EXPECT_TRUE(book.give_back_now(c));
  EXPECT_EQ(book.free_blocks(), 1u);
  EXPECT_EQ(book.used_bytes(), 0u);
  EXPECT_EQ(allocate(book, 4 * kMiB), 0u) << "the three frees make one block again";
  EXPECT_EQ(book.mapped_bytes(), 4 * kMiB) << "no new chunk for memory already mapped";
}

TEST(ArenaBook, TheSmallestFittingBlockIsTaken) {
  ArenaBook book(kChunk, 8, 512, true);
  const std::size_t big = allocate(book, 3 * kMiB);
  const std::size_t keep = allocate(book, 512);
  const std::size_t small = allocate(book, kMiB);
  const std::size_t keep2 = allocate(book, 512);
  ASSERT_TRUE(book.give_back_now(big));
  ASSERT_TRUE(book.give_back_now(small));
  EXPECT_EQ(allocate(book, kMiB), small) << "best fit, not first fit";
  (void)keep;
  (void)keep2;
}

TEST(ArenaBook, BadFreesChangeNothing) {
  ArenaBook book(kChunk, 4, 512, true);
  const std::size_t a = allocate(book, kMiB);
  EXPECT_FALSE(book.give_back_now(a + 512)) << "not the start of an allocation";
  EXPECT_FALSE(book.give_back(12345, 1, 1));
  EXPECT_TRUE(book.give_back_now(a));
  EXPECT_FALSE(book.give_back_now(a)) << "a double free";
  EXPECT_FALSE(book.give_back(a, 1, 1));
  EXPECT_EQ(book.pending_frees(), 0u);
  EXPECT_EQ(book.used_bytes(), 0u);
}

TEST(ArenaBook, APendingFreeIsReusedOnlyOnItsOwnStream) {
  ArenaBook book(kChunk, 8, 512, /*same_stream_reuse=*/true);
  const std::size_t a = allocate(book, kChunk, 7);
  ASSERT_TRUE(book.give_back(a, /*stream=*/7, /*token=*/1));
  EXPECT_EQ(book.used_bytes(), 0u) << "a freed allocation is no longer used";
  EXPECT_EQ(book.take(kChunk, 8), ArenaBook::kNone) << "another stream would race the pending free";
  EXPECT_EQ(book.take(kChunk, 0), ArenaBook::kNone) << "an unknown stream is never the same stream";
  EXPECT_EQ(book.take(kChunk, 7), a) << "the freeing stream is ordered after its own free";
  EXPECT_EQ(book.pending_frees(), 0u);
  EXPECT_EQ(book.drain_released_tokens(), std::vector<std::uint64_t>{1}) << "nothing waits on the event any more";
}

TEST(ArenaBook, HostMemoryWaitsForItsFreeEvenOnTheSameStream) {
  ArenaBook book(kChunk, 8, 4096, /*same_stream_reuse=*/false);
  const std::size_t a = allocate(book, kChunk, 7);
  ASSERT_TRUE(book.give_back(a, 7, 1));
  EXPECT_EQ(book.take(kChunk, 7), ArenaBook::kNone) << "the host writes it: stream order does not cover that";
  const std::size_t b = allocate(book, kChunk, 7);
  EXPECT_NE(b, a) << "more was mapped instead";
  EXPECT_EQ(book.mapped_bytes(), 2 * kChunk);
  book.settle([](std::uint64_t) { return true; });
  EXPECT_EQ(book.take(kChunk, 9), a) << "once the free completed, any stream reuses it";
}

TEST(ArenaBook, SettleAsksEachEventOnceAndFreesOnlyCompletedOnes) {
  ArenaBook book(kChunk, 8, 512, true);
  const std::size_t a = allocate(book, kMiB);
  const std::size_t b = allocate(book, kMiB);
  const std::size_t c = allocate(book, kMiB);
  ASSERT_TRUE(book.give_back(a, 1, 10));
  ASSERT_TRUE(book.give_back(b, 1, 10));
  ASSERT_TRUE(book.give_back(c, 2, 20));
  std::map<std::uint64_t, int> asked;
  book.settle([&](std::uint64_t token) {
    ++asked[token];
    return token == 10;
  });
  EXPECT_EQ(asked[10], 1);
  EXPECT_EQ(asked[20], 1);
  EXPECT_EQ(book.pending_frees(), 1u) << "token 20 has not completed";
  EXPECT_EQ(book.drain_released_tokens(), std::vector<std::uint64_t>{10});
  EXPECT_TRUE(book.drain_released_tokens().empty()) << "each token is released once";
  EXPECT_EQ(book.take(2 * kMiB, 3), a) << "a and b coalesced once settled";
  book.settle([](std::uint64_t) { return true; });
  EXPECT_EQ(book.drain_released_tokens(), std::vector<std::uint64_t>{20});
  EXPECT_EQ(book.pending_frees(), 0u);
}

TEST(ArenaBook, APendingFreeSplitKeepsWaitingOnItsToken) {
  ArenaBook book(kChunk, 8, 512, true);
  const std::size_t a = allocate(book, kChunk, 5);
  ASSERT_TRUE(book.give_back(a, 5, 3));
  EXPECT_EQ(book.take(kMiB, 5), a);
  EXPECT_TRUE(book.drain_released_tokens().empty()) << "the rest of the block still waits on token 3";
  EXPECT_EQ(book.pending_frees(), 1u);
  EXPECT_EQ(book.take(kMiB, 6), ArenaBook::kNone) << "the rest is still pending for other streams";
  book.settle([](std::uint64_t token) { return token == 3; });
  EXPECT_EQ(book.drain_released_tokens(), std::vector<std::uint64_t>{3});
  EXPECT_EQ(book.take(kMiB, 6), a + kMiB);
}

TEST(ArenaBook, GrowthJoinsFreeMemoryOnEitherSideWithTheFewestChunks) {
  ArenaBook book(kChunk, 8, 512, true);
  // Chunks 0..3 mapped; trimming chunks 1 and 2 leaves a gap between 1 MiB free at the end of
  // chunk 0 and 1 MiB free at the start of chunk 3.
  ASSERT_EQ(allocate(book, kMiB), 0u);
  const std::size_t middle = allocate(book, 5 * kMiB);
  ASSERT_EQ(middle, kMiB);
  const std::size_t pad = allocate(book, kMiB);
  ASSERT_EQ(pad, 6 * kMiB);
  ASSERT_EQ(allocate(book, kMiB), 7 * kMiB);
  ASSERT_EQ(book.mapped_bytes(), 8 * kMiB);
  ASSERT_TRUE(book.give_back_now(middle));
  ASSERT_TRUE(book.give_back_now(pad));
  const std::vector<ChunkRun> trimmed = book.take_trimmable();
  ASSERT_EQ(trimmed, (std::vector<ChunkRun>{ChunkRun{1, 2}}));
  EXPECT_FALSE(book.is_mapped(1));
  EXPECT_FALSE(book.is_mapped(2));
  EXPECT_EQ(book.mapped_bytes(), 4 * kMiB);
  EXPECT_EQ(book.free_blocks(), 2u);
  // 6 MiB: both chunks of the gap plus the free MiB on each side; nothing smaller does it.
  EXPECT_EQ(book.plan_growth(6 * kMiB), (ChunkRun{1, 2}));
  // 3 MiB: one chunk beside the free MiB before the gap.
  EXPECT_EQ(book.plan_growth(3 * kMiB), (ChunkRun{1, 1}));
  book.add_mapped(ChunkRun{1, 2});
  EXPECT_EQ(book.free_blocks(), 1u) << "the mapped gap joins the free memory on both sides";
  EXPECT_EQ(book.take(6 * kMiB, 0), kMiB);
}

TEST(ArenaBook, TrimTakesOnlyWholeChunksOfCompletedFreeMemory) {
  ArenaBook book(kChunk, 16, 512, true);
  const std::size_t a = allocate(book, 4 * kMiB);  // chunks 0, 1
  const std::size_t b = allocate(book, 3 * kMiB);  // chunk 2 and half of 3
  const std::size_t c = allocate(book, 4 * kMiB);  // half of 3, 4, half of 5
  ASSERT_EQ(book.mapped_bytes(), 12 * kMiB);
  ASSERT_TRUE(book.give_back_now(a));
  ASSERT_TRUE(book.give_back(b, 1, 9));  // pending: not trimmable
  std::vector<ChunkRun> runs = book.take_trimmable();
  EXPECT_EQ(runs, (std::vector<ChunkRun>{ChunkRun{0, 2}}));
  EXPECT_EQ(book.mapped_bytes(), 8 * kMiB);
  EXPECT_EQ(book.used_bytes(), 4 * kMiB);
  book.settle([](std::uint64_t) { return true; });
  runs = book.take_trimmable();
  EXPECT_EQ(runs, (std::vector<ChunkRun>{ChunkRun{2, 1}})) << "chunk 3 still holds half of c";
  EXPECT_TRUE(book.is_mapped(3));
  ASSERT_TRUE(book.give_back_now(c));
  runs = book.take_trimmable();
  EXPECT_EQ(runs, (std::vector<ChunkRun>{ChunkRun{3, 3}}));
  EXPECT_EQ(book.mapped_bytes(), 0u);
  EXPECT_EQ(book.free_blocks(), 0u);
  EXPECT_EQ(book.mapped_high_bytes(), 12 * kMiB) << "the high mark remembers";
  EXPECT_EQ(allocate(book, kMiB), 0u) << "growth after a trim starts at the lowest gap";
}

TEST(ArenaBook, AChunkThatCouldNotBeUnmappedGoesBack) {
  ArenaBook book(kChunk, 4, 512, true);
  const std::size_t a = allocate(book, kChunk);
  ASSERT_TRUE(book.give_back_now(a));
  const std::vector<ChunkRun> runs = book.take_trimmable();
  ASSERT_EQ(runs, (std::vector<ChunkRun>{ChunkRun{0, 1}}));
  book.add_mapped(runs[0]);  // what StagingArena::trim does when cuMemUnmap fails
  EXPECT_EQ(book.mapped_bytes(), kChunk);
  EXPECT_EQ(book.take(kChunk, 0), 0u);
}

TEST(ArenaBook, ManyLoadsAndUnloadsReuseTheSameChunks) {
  // A server that loads and unloads models: each load's staging freed in order on its stream,
  // settled before the next load; the arena never maps more than one model needs.
  ArenaBook book(kChunk, 64, 512, true);
  std::uint64_t token = 0;
  for (int load = 0; load < 50; ++load) {
    std::vector<std::size_t> held;
    for (int t = 0; t < 3; ++t) held.push_back(allocate(book, kMiB, 100 + load));
    for (std::size_t offset : held) ASSERT_TRUE(book.give_back(offset, 100 + load, ++token));
    book.settle([](std::uint64_t) { return true; });
    EXPECT_EQ(book.drain_released_tokens().size(), 3u);
  }
  EXPECT_EQ(book.mapped_high_bytes(), 4 * kMiB);
  EXPECT_EQ(book.used_bytes(), 0u);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
