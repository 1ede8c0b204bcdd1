// What a call leaves current: the caller's green context stays the current context through a
// device guard to the same device, a guard to another device and a call to a session on either.
#include <gtest/gtest.h>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "cuda/device.h"
#include "cuda/driver.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

CUcontext current_context() {
  auto api = ex::cuda::driver();
  CUcontext context = nullptr;
  if (api.ok()) (*api)->cuCtxGetCurrent(&context);
  return context;
}

/// Device 0 current at the start of every test (a test of this suite makes device 1 current).
class CallersContextGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

// A guard to the current device leaves the caller's green context current, and so does a call:
// the device guard restores the caller's context, not the device with cudaSetDevice, which would
// make the device's primary context current.
TEST_F(CallersContextGpu, GuardsToTheCurrentDeviceLeaveTheCallersGreenContextCurrent) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto green_context = green.partitions[0].context.as_context();
  TRTET_ASSERT_OK(green_context);
  auto s = make_session("elementwise min=1 max=65536");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{4096});
  {
    ScopedCurrentContext current(green.partitions[0].context);
    ASSERT_TRUE(current.ok());
    ASSERT_EQ(current_context(), *green_context);
    {
      ex::cuda::DeviceGuard guard(0);
      TRTET_ASSERT_OK(guard.status());
      EXPECT_EQ(current_context(), *green_context) << "DeviceGuard to the current device changed the context";
    }
    EXPECT_EQ(current_context(), *green_context) << "DeviceGuard to the current device did not restore the context";
    {
      CudaStreamGuard guard(green.small);
      TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
    }
    EXPECT_EQ(current_context(), *green_context) << "execute left another context current than the caller's green one";
  }
  ASSERT_EQ(cudaStreamSynchronize(green.small), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
}

// The same with a session and a guard on another device (2 GPUs).
TEST_F(CallersContextGpu, CallOnAnotherDeviceLeavesTheCallersGreenContextCurrent) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs 2 GPUs";
  auto s = make_session_on(1, "elementwise min=1 max=65536");
  ASSERT_TRUE(s.session);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  OwnedStream other_device_stream;
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{4096});  // on device 1
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_TRUE(other_device_stream.ok());
  GreenPartitions green;  // device 0
  ASSERT_TRUE(green.ok());
  auto green_context = green.partitions[0].context.as_context();
  TRTET_ASSERT_OK(green_context);
  {
    ScopedCurrentContext current(green.partitions[0].context);
    ASSERT_TRUE(current.ok());
    {
      ex::cuda::DeviceGuard guard(1);
      TRTET_ASSERT_OK(guard.status());
    }
    EXPECT_EQ(current_context(), *green_context)
        << "DeviceGuard to device 1 restored device 0's primary context, not the caller's green context";
    {
      CudaStreamGuard guard(other_device_stream);
      TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
    }
    EXPECT_EQ(current_context(), *green_context)
        << "execute on a device-1 session left another context current than the caller's device-0 green context";
  }
  ASSERT_EQ(cudaStreamSynchronize(other_device_stream), cudaSuccess);
  EXPECT_TRUE(io.out_matches());
}

}  // namespace
}  // namespace trtet_test
