// The elementwise_device program's method, loaded directly and bound to pinned host I/O, for the GPU tests that run it
// through a documented example (README's partitions, PLANNING.md's run_as_planned): the example
// synchronizes its stream, after which the outputs are in place. Use the checks inside
// ASSERT_NO_FATAL_FAILURE.
#pragma once

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <optional>
#include <utility>

#include "common/gpu.h"
#include "engines/cuda_test_engine.h"
#include "executorch/executorch_test_support.h"

namespace trtet_test {

/// The program's method (under a recording factory) and pinned host x, y and out of kRows x kCols
/// floats, freed with it.
struct PinnedElementwiseMethod {
  static constexpr int kRows = 8, kCols = 64, kCount = kRows * kCols;
  RecordingFactory factory;
  DirectMethod direct;
  std::optional<etr::Result<etr::Method>> method;  ///< once loaded
  float* x = nullptr;
  float* y = nullptr;
  float* out = nullptr;
  ::executorch::extension::TensorPtr tx, ty;
  CudaTestEngine* engine = nullptr;  ///< the method's engine, once bound

  PinnedElementwiseMethod() = default;
  ~PinnedElementwiseMethod() {
    for (float* p : {x, y, out}) {
      if (p != nullptr) cudaFreeHost(p);
    }
  }
  PinnedElementwiseMethod(const PinnedElementwiseMethod&) = delete;  // owns the buffers
  PinnedElementwiseMethod& operator=(const PinnedElementwiseMethod&) = delete;

  /// Loads the method, allocates the buffers with x[i] = x_scale * (i % x_period), y[i] = i % y_period
  /// and out -1, binds them to it (inputs 0 and 1, output 0), and clears its engine's SM record.
  void load(float x_scale, int x_period, int y_period) {
    ASSERT_EQ(direct.load_program("elementwise_device"), etr::Error::Ok);  // records the SMs it runs on
    method.emplace(direct.load_method());
    ASSERT_TRUE(method->ok()) << captured_log();
    for (float** p : {&x, &y, &out}) {
      ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(p), kCount * sizeof(float), 0), cudaSuccess);
    }
    for (int i = 0; i < kCount; ++i) {
      x[i] = x_scale * static_cast<float>(i % x_period);
      y[i] = static_cast<float>(i % y_period);
      out[i] = -1.0f;
    }
    tx = ::executorch::extension::from_blob(x, {kRows, kCols});
    ty = ::executorch::extension::from_blob(y, {kRows, kCols});
    ASSERT_EQ(get().set_input(etr::EValue(*tx), 0), etr::Error::Ok);
    ASSERT_EQ(get().set_input(etr::EValue(*ty), 1), etr::Error::Ok);
    ASSERT_EQ(get().set_output_data_ptr(out, kCount * sizeof(float), 0), etr::Error::Ok);
    engine = dynamic_cast<CudaTestEngine*>(factory.last_engine());
    ASSERT_NE(engine, nullptr);
    TRTET_ASSERT_OK(engine->clear_recorded_sms());
  }

  /// The loaded method.
  etr::Method& get() { return method->get(); }

  /// out = 2x - 0.5y everywhere, and the engine ran on at least one and at most `max_sms` SMs
  /// (`outside` is the message where it ran on more).
  void expect_ran_within(unsigned max_sms, const char* outside) const {
    for (int i = 0; i < kCount; ++i) ASSERT_FLOAT_EQ(out[i], elementwise_expected(x[i], y[i])) << "element " << i;
    auto ran_on = engine->recorded_sms();
    ASSERT_TRUE(ran_on.ok()) << ran_on.status().to_string();
    EXPECT_GT(ran_on->size(), 0u);
    EXPECT_LE(ran_on->size(), max_sms) << outside;
  }
};

}  // namespace trtet_test
