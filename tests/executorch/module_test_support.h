// The names every test that runs a program through ExecuTorch's Module uses.
#pragma once

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include "common/gpu.h"
#include "executorch/executorch_test_support.h"

namespace trtet_test {

using etr::Error;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

/// A GPU test that runs the test programs through Module: set up with a GPU, the programs,
/// ExecuTorch's runtime, an empty log and device 0 current.
class ModuleGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (!have_test_programs()) GTEST_FAIL() << "no test programs: flatc or ExecuTorch's program.fbs was not found";
    ensure_executorch_runtime();
    clear_log();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

}  // namespace trtet_test
