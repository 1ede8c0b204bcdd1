// Whether small copies may take the copy kernel here (Note [small copies] in
// src/staging/small_copy.cu), for the tests that count which way a transfer went.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "staging/small_copy.h"

namespace trtet_test {

/// True where small copies may take the copy kernel on this device. The GPU machines' builds are for
/// sm_90, so there a missing kernel fails the calling test (TRTET_SMALL_COPIES=engines left set?);
/// elsewhere the caller skips, or expects the copy engines.
inline bool kernel_copies_here() {
  if (torch_tensorrt::executorch_backend::staging::kernel_copies_on_current_device()) return true;
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  EXPECT_FALSE(major == 9 && minor == 0) << "an sm_90 device without the copy kernel (TRTET_SMALL_COPIES=engines left set?)";
  return false;
}

}  // namespace trtet_test
