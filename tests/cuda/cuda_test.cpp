// CPU tests of the cuda layer: error mapping and ownership rules; no device needed.
#include <gtest/gtest.h>

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

TEST(CudaCheck, ErrorNamesCallFileLineAndCudaMessage) {
  Status s = check_call(cudaErrorInvalidValue);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_EQ(s.message().rfind("error failed at ", 0), 0u) << s.message();  // the call text as written
  TRTET_EXPECT_ERROR_SAYS(s, "cuda_test.cpp:", cudaGetErrorString(cudaErrorInvalidValue), "cudaErrorInvalidValue");
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
  TRTET_EXPECT_ERROR(s, ErrorCode::kInternal, "cuLaunch() failed at f.cpp:7");
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
