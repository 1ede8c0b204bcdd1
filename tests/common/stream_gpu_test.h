// The fixture of GPU suites that run on a stream of their own, and what tells a stream object from
// a handle that names a default stream.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "common/gpu.h"
#include "cuda/stream_facts.h"

namespace trtet_test {

/// A stream object, not a handle that names a default stream (TensorRT synchronizes the device for those).
inline bool is_stream_object(cudaStream_t stream) {
  return !torch_tensorrt::executorch_backend::cuda::is_default_stream_handle(stream);
}

/// A GPU test (skipped, with the reason, without a GPU) with a non-blocking stream of its own,
/// `stream_`, destroyed after the test.
class StreamGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override { destroy_stream(); }
  /// Destroys `stream_` where one was made: cudaStreamDestroy's result, cudaSuccess where none was.
  cudaError_t destroy_stream() {
    if (stream_ == nullptr) return cudaSuccess;
    const cudaError_t destroyed = cudaStreamDestroy(stream_);
    stream_ = nullptr;
    return destroyed;
  }

  cudaStream_t stream_ = nullptr;
};

/// A GPU test with `N` non-blocking streams of its own, `streams_`, each synchronized and destroyed
/// after the test.
template <int N>
class StreamsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    for (auto& s : streams_) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    for (auto& s : streams_) {
      if (s == nullptr) continue;
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    }
  }

  cudaStream_t streams_[N] = {};
};

}  // namespace trtet_test
