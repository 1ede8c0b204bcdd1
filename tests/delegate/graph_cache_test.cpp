// CPU tests of the delegate-graph cache's bookkeeping (delegate/graph_cache.h): keys, the least
// recently used entry out first, a capacity of 0 keeping nothing. (Entries here hold no graphs.)
#include "delegate/graph_cache.h"

#include <gtest/gtest.h>

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

TEST(GraphCache, CapacityZeroKeepsNothing) {
  GraphCache cache(0);
  EXPECT_EQ(cache.insert(key(0, 1)), nullptr);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find(key(0, 1)), nullptr);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
