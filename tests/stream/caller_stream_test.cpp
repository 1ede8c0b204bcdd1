// CudaStreamGuard semantics; no device needed (streams are opaque handles here).
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <type_traits>

#include "stream/cross_library.h"

namespace torch_tensorrt::executorch_backend {
namespace {

static_assert(!std::is_default_constructible_v<CudaStreamGuard>);
static_assert(!std::is_copy_constructible_v<CudaStreamGuard>);
static_assert(!std::is_copy_assignable_v<CudaStreamGuard>);
static_assert(!std::is_move_constructible_v<CudaStreamGuard>);
static_assert(!std::is_move_assignable_v<CudaStreamGuard>);
static_assert(std::is_constructible_v<CudaStreamGuard, cudaStream_t>);
static_assert(!std::is_convertible_v<cudaStream_t, CudaStreamGuard>, "the constructor is explicit");

cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(n * 0x100); }

TEST(CudaStreamGuard, NothingSelectedOutsideAnyGuard) { EXPECT_FALSE(caller_stream().has_value()); }

TEST(CudaStreamGuard, SelectsAndRestoresAfterScope) {
  {
    CudaStreamGuard guard(fake_stream(1));
    ASSERT_TRUE(caller_stream().has_value());
    EXPECT_EQ(*caller_stream(), fake_stream(1));
    EXPECT_EQ(guard.stream(), fake_stream(1));
  }
  EXPECT_FALSE(caller_stream().has_value());
}

TEST(CudaStreamGuard, NestsInnermostWinsAndEachRestores) {
  CudaStreamGuard outer(fake_stream(1));
  {
    CudaStreamGuard inner(fake_stream(2));
    EXPECT_EQ(*caller_stream(), fake_stream(2));
    {
      CudaStreamGuard innermost(fake_stream(3));
      EXPECT_EQ(*caller_stream(), fake_stream(3));
    }
    EXPECT_EQ(*caller_stream(), fake_stream(2));
  }
  EXPECT_EQ(*caller_stream(), fake_stream(1));
}

// nullptr does not select the legacy stream by accident: it does not compile (a literal 0, which
// no type trait can stand for, is compiled and refused by guard_literal_zero, tests/stream). A
// cudaStream_t does, whatever it holds, and so does the named null stream.
static_assert(!std::is_constructible_v<CudaStreamGuard, std::nullptr_t>, "CudaStreamGuard(nullptr) must not compile");
static_assert(std::is_constructible_v<CudaStreamGuard, cudaStream_t>, "the seed's CudaStreamGuard(stream)");
static_assert(std::is_constructible_v<CudaStreamGuard, decltype(kNullStream)>, "the named null stream");
static_assert(!std::is_convertible_v<cudaStream_t, CudaStreamGuard>, "explicit: no guard made by conversion");

TEST(CudaStreamGuard, NullStreamCountsAsSelected) {
  CudaStreamGuard outer(fake_stream(5));
  {
    CudaStreamGuard guard(kNullStream);
    ASSERT_TRUE(caller_stream().has_value());
    EXPECT_EQ(*caller_stream(), nullptr);
  }
  EXPECT_EQ(*caller_stream(), fake_stream(5));
}

TEST(CudaStreamGuard, SelectionIsPerThread) {
  CudaStreamGuard guard(fake_stream(7));
  std::optional<cudaStream_t> seen_by_other = fake_stream(99);
  std::optional<cudaStream_t> nested_in_other;
  std::thread other([&] {
    seen_by_other = caller_stream();
    CudaStreamGuard mine(fake_stream(8));
    nested_in_other = caller_stream();
  });
  other.join();
  EXPECT_FALSE(seen_by_other.has_value());
  ASSERT_TRUE(nested_in_other.has_value());
  EXPECT_EQ(*nested_in_other, fake_stream(8));
  EXPECT_EQ(*caller_stream(), fake_stream(7));  // the other thread's guard did not touch ours
}

TEST(CudaStreamGuard, VisibleAcrossSharedObjects) {
  std::optional<cudaStream_t> seen;
  trtet_with_guard_in_setter_library(fake_stream(11), [&] { seen = trtet_caller_stream_in_reader_library(); });
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(*seen, fake_stream(11));
  EXPECT_FALSE(trtet_caller_stream_in_reader_library().has_value());
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
