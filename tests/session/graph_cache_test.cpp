// CPU tests of the delegate-graph cache's bookkeeping (session/graph_cache.h): keys, the least
// recently used entry reused first, a full cache passing a graph on as a spare to a key of the same
// green context only, a capacity of 0 keeping nothing. (The graphs here are stand-in pointers,
// never launched or destroyed: each test clears them before the cache goes.)
#include "session/graph_cache.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

GraphKey key(int profile, std::int64_t rows, void* address = nullptr) {
  GraphKey k;
  k.profile = profile;
  k.dims = {2, rows, 4};
  k.addresses = {address, nullptr};
  return k;
}

TEST(GraphCache, KeysDifferInProfileShapeAddressOrGreenContext) {
  int a = 0;
  EXPECT_EQ(key(0, 8), key(0, 8));
  EXPECT_FALSE(key(0, 8) == key(1, 8));
  EXPECT_FALSE(key(0, 8) == key(0, 9));
  EXPECT_FALSE(key(0, 8) == key(0, 8, &a));
  GraphKey green = key(0, 8);
  green.green = reinterpret_cast<CUgreenCtx>(&a);
  EXPECT_FALSE(green == key(0, 8));
}

TEST(GraphCache, FindsWhatWasInserted) {
  GraphCache cache(4);
  EXPECT_EQ(cache.find(key(0, 8)), nullptr);
  GraphCache::Entry* entry = cache.insert(key(0, 8));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->exec, nullptr);
  EXPECT_EQ(cache.find(key(0, 8)), entry);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(GraphCache, TheLeastRecentlyUsedEntryGoesFirst) {
  GraphCache cache(2);
  cache.insert(key(0, 1));
  cache.insert(key(0, 2));
  ASSERT_NE(cache.find(key(0, 1)), nullptr);  // 1 used after 2
  cache.insert(key(0, 3));                    // evicts 2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.find(key(0, 1)), nullptr);
  EXPECT_EQ(cache.find(key(0, 2)), nullptr);
  EXPECT_NE(cache.find(key(0, 3)), nullptr);
}

/// A stand-in executable graph: an address that is never launched or destroyed.
cudaGraphExec_t stand_in(int& storage) { return reinterpret_cast<cudaGraphExec_t>(&storage); }

/// Inserts `k` and gives its entry a stand-in graph; nullptr where the cache refused the key.
GraphCache::Entry* insert_holding_graph(GraphCache& cache, const GraphKey& k, int& storage) {
  GraphCache::Entry* entry = cache.insert(k);
  if (entry != nullptr) entry->exec = stand_in(storage);
  return entry;
}

/// Forgets every stand-in graph of `keys` so that the cache's destructor destroys nothing.
void forget_graphs(GraphCache& cache, std::initializer_list<GraphKey> keys) {
  for (const GraphKey& k : keys) {
    if (GraphCache::Entry* entry = cache.find(k)) entry->exec = nullptr;
  }
}

TEST(GraphCache, AFullCacheHandsItsLeastRecentlyUsedGraphToTheNewKeyAsASpare) {
  int storage = 0;
  GraphCache cache(2);
  GraphCache::Entry* first = insert_holding_graph(cache, key(0, 1), storage);
  ASSERT_NE(first, nullptr);
  first->current = true;
  cache.insert(key(0, 2));
  ASSERT_NE(cache.find(key(0, 2)), nullptr);       // 2 used after 1
  GraphCache::Entry* third = cache.insert(key(0, 3));  // takes 1's entry: no graph is destroyed
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find(key(0, 1)), nullptr);
  EXPECT_EQ(third->exec, stand_in(storage)) << "the graph stays, as a spare for key 3";
  EXPECT_FALSE(third->current) << "a spare must be updated to key 3's capture before it runs";
  EXPECT_FALSE(third->eager);
  forget_graphs(cache, {key(0, 2), key(0, 3)});
}

TEST(GraphCache, OnlyAnEntryOfTheSameGreenContextPassesItsGraphOn) {
  int storage = 0, green_a = 0, green_b = 0;
  GraphKey on_a = key(0, 1), on_b = key(0, 2), other_on_b = key(0, 3), plain = key(0, 4);
  on_a.green = reinterpret_cast<CUgreenCtx>(&green_a);
  on_b.green = other_on_b.green = reinterpret_cast<CUgreenCtx>(&green_b);
  GraphCache cache(1);
  GraphCache::Entry* entry = insert_holding_graph(cache, on_a, storage);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(cache.insert(on_b), nullptr) << "a graph of green context A would run key B's kernels on A";
  EXPECT_EQ(cache.insert(plain), nullptr);
  EXPECT_NE(cache.find(on_a), nullptr) << "a refused key leaves the cache as it was";
  entry->exec = nullptr;  // an entry without a graph goes to any key
  ASSERT_NE(insert_holding_graph(cache, on_b, storage), nullptr);
  entry = cache.insert(other_on_b);  // same green context: takes the graph as a spare
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->exec, stand_in(storage));
  entry->exec = nullptr;
}

TEST(GraphCache, AReusedEntryForgetsThatItsSpareWasRefused) {
  int storage = 0;
  GraphCache cache(1);
  GraphCache::Entry* entry = insert_holding_graph(cache, key(0, 1), storage);
  ASSERT_NE(entry, nullptr);
  entry->eager = true;  // say the driver refused to update the spare to key 1's graph
  entry = cache.insert(key(0, 2));
  ASSERT_NE(entry, nullptr);
  EXPECT_FALSE(entry->eager) << "key 2 gets its own try at updating the spare";
  EXPECT_FALSE(entry->current);
  entry->exec = nullptr;
}

TEST(GraphCache, CapacityZeroKeepsNothing) {
  GraphCache cache(0);
  EXPECT_EQ(cache.insert(key(0, 1)), nullptr);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find(key(0, 1)), nullptr);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
