// The pointer-kind cache's policy (session/memory_kind.h), without a GPU: what it keeps, what it
// asks again, and what it hands back when asking fails. The driver is replaced by a table of what
// is at each address now.
#include "session/memory_kind.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "common/error_match.h"
#include "common/gpu.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

// What the "driver" says is at each address, and how often it was asked.
std::map<const void*, Result<PointerFacts>>& memory_now() {
  static std::map<const void*, Result<PointerFacts>> table;
  return table;
}
int asked = 0;

Result<PointerFacts> ask_table(const void* pointer, int /*engine_device*/) {
  ++asked;
  const auto found = memory_now().find(pointer);
  if (found == memory_now().end()) return make_error(ErrorCode::kInternal, "nothing known at %p", pointer);
  return found->second;
}

const void* address(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

class PointerKindCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_now().clear();
    asked = 0;
  }
  void put(const void* p, MemoryKind kind, bool mapped = false) {
    memory_now().insert_or_assign(p, Result<PointerFacts>(PointerFacts{kind, mapped}));
  }
  PointerKindCache cache_{&ask_table};
};

TEST_F(PointerKindCacheTest, DeviceManagedAndPageableMemoryIsAskedOnceAndThenServedFromTheCache) {
  const void* device = address(0x1000);
  const void* managed = address(0x2000);
  const void* pageable = address(0x3000);
  put(device, MemoryKind::kDevice);
  put(managed, MemoryKind::kManaged);
  put(pageable, MemoryKind::kPageableHost);
  for (int call = 0; call < 3; ++call) {
    TRTET_ASSERT_OK(cache_.classify(device, 0));
    TRTET_ASSERT_OK(cache_.classify(managed, 0));
    auto facts = cache_.classify(pageable, 0);
    TRTET_ASSERT_OK(facts);
    EXPECT_EQ(facts->kind, MemoryKind::kPageableHost);
  }
  EXPECT_EQ(asked, 3) << "the memory-planned kinds are asked once each, then kept";
}

TEST_F(PointerKindCacheTest, PinnedMemoryIsAskedOnEveryCall) {
  const void* pinned = address(0x4000);
  put(pinned, MemoryKind::kPinnedHost, /*mapped=*/true);
  for (int call = 0; call < 4; ++call) {
    auto facts = cache_.classify(pinned, 0);
    TRTET_ASSERT_OK(facts);
    EXPECT_EQ(facts->kind, MemoryKind::kPinnedHost);
    EXPECT_TRUE(facts->device_mapped);
  }
  EXPECT_EQ(asked, 4);
}

// A pinned tensor freed and its address handed to a device allocation: the next call sees device
// memory (bound directly, not staged), and from then on the entry is kept as device memory.
TEST_F(PointerKindCacheTest, AnAddressOnceCachedAsPinnedIsSeenAsWhatIsThereNow) {
  const void* p = address(0x5000);
  put(p, MemoryKind::kPinnedHost, /*mapped=*/true);
  TRTET_ASSERT_OK(cache_.classify(p, 0));
  put(p, MemoryKind::kDevice);
  auto facts = cache_.classify(p, 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, MemoryKind::kDevice) << "the cached kind, not the memory there now";
  EXPECT_FALSE(facts->device_mapped);
  const int asked_before = asked;
  TRTET_ASSERT_OK(cache_.classify(p, 0));
  EXPECT_EQ(asked, asked_before) << "device memory, once seen, is kept";

  // Unregistered in place: pageable now, and not mapped (a copy kernel must not touch it).
  const void* q = address(0x6000);
  put(q, MemoryKind::kPinnedHost, /*mapped=*/true);
  TRTET_ASSERT_OK(cache_.classify(q, 0));
  put(q, MemoryKind::kPageableHost);
  facts = cache_.classify(q, 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, MemoryKind::kPageableHost);
  EXPECT_FALSE(facts->device_mapped);
}

TEST_F(PointerKindCacheTest, WhenAskingAgainFailsTheErrorIsReturnedAndTheNextCallAsksAgain) {
  const void* p = address(0x7000);
  put(p, MemoryKind::kPinnedHost, /*mapped=*/true);
  TRTET_ASSERT_OK(cache_.classify(p, 0));
  memory_now().insert_or_assign(p, Result<PointerFacts>(make_error(ErrorCode::kInvalidArgument, "on device 1")));
  TRTET_EXPECT_ERROR(cache_.classify(p, 0), ErrorCode::kInvalidArgument, "on device 1");
  put(p, MemoryKind::kPinnedHost, /*mapped=*/false);
  auto facts = cache_.classify(p, 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, MemoryKind::kPinnedHost);
  EXPECT_FALSE(facts->device_mapped) << "the facts of the failed ask were not kept";
}

TEST_F(PointerKindCacheTest, ThirtyThreeAddressesPushTheOldestOut) {
  for (std::uintptr_t i = 1; i <= 33; ++i) put(address(i * 0x100), MemoryKind::kDevice);
  for (std::uintptr_t i = 1; i <= 33; ++i) TRTET_ASSERT_OK(cache_.classify(address(i * 0x100), 0));
  EXPECT_EQ(asked, 33);
  TRTET_ASSERT_OK(cache_.classify(address(33 * 0x100), 0));
  EXPECT_EQ(asked, 33) << "the newest is kept";
  TRTET_ASSERT_OK(cache_.classify(address(0x100), 0));
  EXPECT_EQ(asked, 34) << "the oldest was pushed out by the 33rd";
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
