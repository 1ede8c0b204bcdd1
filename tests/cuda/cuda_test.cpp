// CPU tests of the cuda layer: error mapping and ownership rules; no device needed.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "common/error_match.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"
#include "cuda/pinned_buffer.h"

namespace torch_tensorrt::executorch_backend::cuda {
namespace {

template <typename T>
constexpr bool kMoveOnly = !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
                           std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>;
static_assert(kMoveOnly<Event>);
static_assert(kMoveOnly<PinnedBuffer>);
static_assert(kMoveOnly<DeviceBuffer>);
static_assert(!std::is_copy_constructible_v<DeviceGuard> && !std::is_move_constructible_v<DeviceGuard>);
static_assert(!std::is_default_constructible_v<DeviceGuard>);

Status check_call(cudaError_t error) {
  TRTET_CUDA_CHECK(error);
  return Status::Ok();
}

TEST(CudaCheck, SuccessIsOk) { EXPECT_TRUE(check_call(cudaSuccess).ok()); }

TEST(CudaCheck, ErrorNamesCallCauseThenRelativeFileLine) {
  Status s = check_call(cudaErrorInvalidValue);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  // The call text as written, then CUDA's cause, then where: a message cut short keeps the cause.
  const std::string expected_start = std::string("error failed: ") + cudaGetErrorString(cudaErrorInvalidValue) +
                                     " (cudaErrorInvalidValue) [tests/cuda/cuda_test.cpp:";
  EXPECT_EQ(s.message().rfind(expected_start, 0), 0u) << s.message();
  // No directory of the machine it was built on (the build may sit under any path).
  EXPECT_EQ(s.message().find(TRTET_SOURCE_DIR), std::string::npos) << s.message();
}

TEST(CudaCheck, SourcePathsAreRelativeToTheRepository) {
  EXPECT_STREQ(source_path("src/cuda/check.cpp"), "src/cuda/check.cpp");
  EXPECT_STREQ(source_path("/home/a/src/checkout/src/cuda/check.cpp"), "src/cuda/check.cpp");
  EXPECT_STREQ(source_path("/a/very/long/tests/path/of/the/build/machine/tests/cuda/cuda_test.cpp"),
               "tests/cuda/cuda_test.cpp");
  EXPECT_STREQ(source_path("/w/python/src/arrays.cpp"), "src/arrays.cpp");
  EXPECT_STREQ(source_path("f.cpp"), "f.cpp");
  EXPECT_STREQ(source_path(nullptr), "");
}

TEST(CudaCheck, TheLibrarysOwnMessagesNameNoBuildDirectory) {
  // A check inside the shared library (compiled apart from this test): on a machine without a GPU the
  // device count fails; with one, a bad device's guard does.
  Status s = Status::Ok();
  auto count = device_count();
  if (!count.ok()) {
    s = count.status();
  } else {
    DeviceGuard guard(1 << 20);
    s = guard.status();
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find(TRTET_SOURCE_DIR), std::string::npos) << s.message();
  TRTET_EXPECT_ERROR_SAYS(s, "[src/cuda/device.cpp:");
}

TEST(CudaCheck, ErrorsMapByMeaning) {
  EXPECT_EQ(check_call(cudaErrorNoDevice).code(), ErrorCode::kNoDevice);
  EXPECT_EQ(check_call(cudaErrorInsufficientDriver).code(), ErrorCode::kNoDevice);
  EXPECT_EQ(check_call(cudaErrorMemoryAllocation).code(), ErrorCode::kMemoryAllocationFailed);
  EXPECT_EQ(check_call(cudaErrorInvalidDevice).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_call(cudaErrorLaunchFailure).code(), ErrorCode::kInternal);
}

TEST(CudaCheck, DriverErrorsMapByMeaning) {
  EXPECT_TRUE(driver_status(CUDA_SUCCESS, "x", "f", 1).ok());
  EXPECT_EQ(driver_status(CUDA_ERROR_INVALID_VALUE, "cuX()", "f.cpp", 3).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver_status(CUDA_ERROR_OUT_OF_MEMORY, "cuX()", "f.cpp", 3).code(), ErrorCode::kMemoryAllocationFailed);
  Status s = driver_status(CUDA_ERROR_LAUNCH_FAILED, "cuLaunch()", "f.cpp", 7);
  TRTET_EXPECT_ERROR(s, ErrorCode::kInternal, "cuLaunch() failed: ", "[f.cpp:7]");
}

TEST(Owners, EmptyOwnersAreFalseAndResetIsSafe) {
  Event e;
  EXPECT_FALSE(e);
  e.reset();
  EXPECT_EQ(e.record(cudaStreamPerThread).code(), ErrorCode::kInvalidState);
  PinnedBuffer p;
  EXPECT_FALSE(p);
  EXPECT_EQ(p.size(), 0u);
  DeviceBuffer d;
  EXPECT_FALSE(d);
  d.reset();
  auto zero = PinnedBuffer::allocate(0);  // zero bytes needs no device
  ASSERT_TRUE(zero.ok());
  EXPECT_FALSE(*zero);
}

TEST(Device, NoDeviceIsReportedAsSuch) {
  auto count = device_count();
  if (count.ok()) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  EXPECT_EQ(count.status().code(), ErrorCode::kNoDevice) << count.status().to_string();
  EXPECT_FALSE(count.status().message().empty());
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::cuda
