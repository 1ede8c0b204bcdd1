// The project's library and ExecuTorch's CUDA backend in one process: a stand-in for the
// latter (standin_cuda_allocator.cpp) registers its CudaAllocator unconditionally at static
// initialization, as ExecuTorch's does, and a second CUDA registration aborts the process. Built
// twice, linked in both orders so both static-initializer orders happen; each binary checks the
// order it was built for (TRTET_EXPECT_TENSORRT_FIRST) and says which one it covered:
//   executorch_coexistence_standin_first_test   the stand-in's initializer runs first: the project's
//                                               library finds the CUDA slot taken (kAnotherWasRegistered)
//   executorch_coexistence_tensorrt_first_test  the project's runs first: it finds ExecuTorch's CUDA
//                                               backend's symbol and does not register (kDeferredToExecuTorchCuda)
// Both: no abort, the stand-in serves CUDA. On a GPU, boundary_copies runs through Module with the
// stand-in's copies and gives the right output.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/device_allocator.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "backend/cuda_allocator.h"
#include "executorch/executorch_test_support.h"
#include "executorch/standin_cuda_allocator.h"

#ifndef TRTET_EXPECT_TENSORRT_FIRST
#error "define TRTET_EXPECT_TENSORRT_FIRST (0 or 1): the static-initializer order this binary covers"
#endif

namespace trtet_test {
namespace {

using ::executorch::runtime::etensor::DeviceType;
using ex::CudaAllocatorRegistration;

const char* order_text(bool tensorrt_first) {
  return tensorrt_first ? "TensorRTBackend's initializer first, then the stand-in's"
                        : "the stand-in's initializer first, then TensorRTBackend's";
}

TEST(Coexistence, NoAbortAndTheStandInServesCudaInThisInitializerOrder) {
  const trtet_standin::InitRecord& record = trtet_standin::init_record();
  ASSERT_TRUE(record.registered) << "the stand-in's initializer did not run to the end";
  const bool tensorrt_first = record.tensorrt_initializer_ran_first;
  std::printf("covered: %s\n", order_text(tensorrt_first));
  ::testing::Test::RecordProperty("initializer_order", order_text(tensorrt_first));
  EXPECT_EQ(tensorrt_first, static_cast<bool>(TRTET_EXPECT_TENSORRT_FIRST))
      << "this binary's link order was meant to give: " << order_text(TRTET_EXPECT_TENSORRT_FIRST);
  EXPECT_TRUE(record.cuda_slot_was_empty) << "the project's library registered a CUDA allocator first";

  EXPECT_EQ(::executorch::runtime::get_device_allocator(DeviceType::CUDA), &trtet_standin::standin_allocator());
  EXPECT_NE(::executorch::runtime::get_device_allocator(DeviceType::CUDA), &ex::cuda_allocator());
  const CudaAllocatorRegistration registration = ex::cuda_allocator_registration();
  std::printf("cuda_allocator_registration(): %s\n", ex::to_string(registration));
  EXPECT_TRUE(registration == CudaAllocatorRegistration::kAnotherWasRegistered ||
              registration == CudaAllocatorRegistration::kDeferredToExecuTorchCuda)
      << ex::to_string(registration);
  // Which of the two follows from the order: a taken slot, or ExecuTorch's CUDA backend seen first.
  EXPECT_EQ(registration, tensorrt_first ? CudaAllocatorRegistration::kDeferredToExecuTorchCuda
                                         : CudaAllocatorRegistration::kAnotherWasRegistered)
      << ex::to_string(registration);
}

// boundary_copies through Module: the stand-in allocates the CUDA arena and makes both copies
// (synchronous cudaMemcpy), the delegate runs the elementwise engine (out = 2x - 0.5y, 2 ms) on the
// device tensors, no guard.
TEST(Coexistence, BoundaryCopiesRunThroughTheStandInWithRightOutputs) {
  TRTET_REQUIRE_GPU();
  if (!have_test_programs()) GTEST_SKIP() << "no test programs: flatc or ExecuTorch's program.fbs was not found at configure";
#if !TRTET_TEST_HAVE_EXECUTORCH_KERNELS
  GTEST_SKIP() << "this ExecuTorch has no CPU kernel library (libexecutorch_kernels_optimized): et_copy's operators are missing";
#endif
  ensure_executorch_runtime();
  clear_log();
  RecordingFactory factory;
  const auto allocations = trtet_standin::counters().allocations.load();
  const auto h2d = trtet_standin::counters().host_to_device.load();
  const auto d2h = trtet_standin::counters().device_to_host.load();
  {
    ::executorch::extension::module::Module module(program_path("boundary_copies"));
    ASSERT_EQ(module.load_method("forward"), ::executorch::runtime::Error::Ok) << captured_log();
    EXPECT_EQ(trtet_standin::counters().allocations.load(), allocations + 1) << "the CUDA arena";
    for (int call = 0; call < 3; ++call) {
      SCOPED_TRACE("call " + std::to_string(call));
      const int rows = 16, cols = 256;
      std::vector<float> x(rows * cols), y(rows * cols);
      for (int i = 0; i < rows * cols; ++i) {
        x[i] = static_cast<float>(i % 97 + call);
        y[i] = static_cast<float>(i % 13) - 4.0f;
      }
      auto xt = ::executorch::extension::from_blob(x.data(), {rows, cols});
      auto yt = ::executorch::extension::from_blob(y.data(), {rows, cols});
      auto outputs = module.forward({::executorch::runtime::EValue(*xt), ::executorch::runtime::EValue(*yt)});
      ASSERT_TRUE(outputs.ok()) << static_cast<int>(outputs.error()) << "\n" << captured_log();
      ASSERT_EQ(outputs->size(), 1u);
      const auto& out = (*outputs)[0].toTensor();
      ASSERT_EQ(out.dim(), 2);
      ASSERT_EQ(out.size(0), rows);
      ASSERT_EQ(out.size(1), cols);
      const float* got = out.const_data_ptr<float>();
      int wrong = 0;
      for (int i = 0; i < rows * cols; ++i) wrong += got[i] != 2.0f * x[i] - 0.5f * y[i];
      EXPECT_EQ(wrong, 0) << "first: got " << got[0] << ", want " << 2.0f * x[0] - 0.5f * y[0];
    }
  }
  EXPECT_EQ(trtet_standin::counters().host_to_device.load(), h2d + 6) << "two inputs, three calls";
  EXPECT_EQ(trtet_standin::counters().device_to_host.load(), d2h + 3);
  EXPECT_EQ(trtet_standin::counters().deallocations.load(), trtet_standin::counters().allocations.load());
}

}  // namespace
}  // namespace trtet_test
