// Without ExecuTorch's CUDA backend (or any other CUDA allocator) in the process, the project's
// library registers its own CUDA DeviceAllocator when it is loaded: the third of the
// coexistence binaries (coexistence_test.cpp has the two with the stand-in). No GPU needed.
#include <executorch/runtime/core/device_allocator.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda_allocator.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
using ::executorch::runtime::etensor::DeviceType;

/// TRTET_CUDA_ALLOCATOR=off, or the deprecated TORCHTRT_ET_CUDA_ALLOCATOR=off with the new name unset.
bool turned_off() {
  const char* setting = std::getenv("TRTET_CUDA_ALLOCATOR");
  if (setting == nullptr) setting = std::getenv("TORCHTRT_ET_CUDA_ALLOCATOR");
  return setting != nullptr && std::strcmp(setting, "off") == 0;
}

TEST(CudaAllocatorRegistration, OursServesCudaWhenNoOtherIsInTheProcess) {
  if (turned_off()) GTEST_SKIP() << "TRTET_CUDA_ALLOCATOR=off: see NoneWhenTheApplicationTurnsItOff";
  ASSERT_EQ(dlsym(RTLD_DEFAULT, "_ZN10executorch8backends4cuda13CudaAllocator8instanceEv"), nullptr)
      << "this binary must not contain ExecuTorch's CUDA backend or the stand-in";
  EXPECT_EQ(ex::cuda_allocator_registration(), ex::CudaAllocatorRegistration::kOurs)
      << ex::to_string(ex::cuda_allocator_registration());
  EXPECT_EQ(::executorch::runtime::get_device_allocator(DeviceType::CUDA), &ex::cuda_allocator());
  EXPECT_EQ(ex::cuda_allocator().device_type(), DeviceType::CUDA);
}

// Run by ctest with TRTET_CUDA_ALLOCATOR=off in the environment, and again with the deprecated
// TORCHTRT_ET_CUDA_ALLOCATOR=off (set before the library loads).
TEST(CudaAllocatorRegistration, NoneWhenTheApplicationTurnsItOff) {
  if (!turned_off()) GTEST_SKIP() << "runs with TRTET_CUDA_ALLOCATOR=off (its own ctest entries)";
  EXPECT_EQ(ex::cuda_allocator_registration(), ex::CudaAllocatorRegistration::kNotRegistered)
      << ex::to_string(ex::cuda_allocator_registration());
  EXPECT_EQ(::executorch::runtime::get_device_allocator(DeviceType::CUDA), nullptr);
}

}  // namespace
