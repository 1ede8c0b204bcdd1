// The fault domain's rule (triton/src/fault_rule.h, Note [the fault domain]): which CUDA errors poison
// the process. No GPU needed: the rule reads the error code alone.
#include "fault_rule.h"

#include <gtest/gtest.h>

namespace {

using trtet_triton::poisons_process;

TEST(FaultRule, StickyErrorsPoisonTheProcess) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorHardwareStackError,
                        cudaErrorIllegalInstruction, cudaErrorMisalignedAddress, cudaErrorInvalidAddressSpace,
                        cudaErrorInvalidPc, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorECCUncorrectable,
                        cudaErrorNvlinkUncorrectable}) {
    EXPECT_TRUE(poisons_process(e)) << cudaGetErrorName(e);
  }
}

TEST(FaultRule, ARequestsOwnErrorsDoNot) {
  // Success, the caller's mistakes, resources a later call may get, and a machine without a GPU:
  // the request fails, the process serves on.
  for (cudaError_t e : {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorLaunchOutOfResources,
                        cudaErrorInvalidDevice, cudaErrorNotReady, cudaErrorNoDevice, cudaErrorInsufficientDriver,
                        cudaErrorInvalidResourceHandle, cudaErrorCooperativeLaunchTooLarge, cudaErrorNotSupported,
                        cudaErrorStreamCaptureInvalidated, cudaErrorInvalidConfiguration}) {
    EXPECT_FALSE(poisons_process(e)) << cudaGetErrorName(e);
  }
}

TEST(FaultRule, EveryRuntimeErrorCodeHasAnAnswerAndOnlyTheStickyOnesPoison) {
  // Across the whole range of runtime error codes, exactly the eleven listed above poison.
  int poisoning = 0;
  for (int code = 0; code < 1000; ++code) poisoning += poisons_process(static_cast<cudaError_t>(code)) ? 1 : 0;
  EXPECT_EQ(poisoning, 11);
}

}  // namespace
