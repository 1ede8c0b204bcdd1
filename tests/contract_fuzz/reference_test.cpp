// The CPU reference the oracle compares outputs with: the kernels' summation order, wrong values,
// poison and swapped outputs caught, deterministic bounded draws, profile selection, side dtypes,
// each output's coefficients, late reads, the staging budget's bindings, shared cache updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/fuzz_outputs_engine.h"
#include "contract_fuzz/generator.h"

namespace trtet_test::fuzz {
namespace {

TEST(ContractFuzzReference, SumFollowsTheKernelsOrder) {
  const std::vector<float> x = draw_floats(100000, 7);
  double exact = 0;
  for (float v : x) exact += v;
  const float sum = reference_sum(x);
  EXPECT_NEAR(sum, exact, 1e-3 * std::fabs(exact) + 1e-2);
  EXPECT_EQ(reference_sum({}), 0.0f);
  EXPECT_EQ(reference_sum({1.5f, -2.0f}), -0.5f);
}

TEST(ContractFuzzReference, CompareCatchesWrongValuesPoisonAndSwappedOutputs) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 2;
  spec.alias = true;
  const EngineModel model(spec);
  ASSERT_EQ(model.io_count(), 6);  // x, y, cache -> out0, out1, cache_out
  std::vector<std::vector<float>> inputs(6);
  inputs[0] = draw_floats(64, 1);
  inputs[1] = draw_floats(64, 2);
  inputs[2] = draw_floats(64, 3);
  std::vector<float> out0(64), out1(64), cache(64);
  for (std::size_t i = 0; i < 64; ++i) {
    out0[i] = 1.0f * inputs[0][i] + 0.5f * inputs[1][i];
    out1[i] = 2.0f * inputs[0][i] - 0.5f * inputs[1][i];
    cache[i] = inputs[0][i] - inputs[2][i];  // kMulti's in-place update: cache = x - cache
  }
  EXPECT_EQ(model.compare(3, out0.data(), 64, inputs), "");
  EXPECT_EQ(model.compare(4, out1.data(), 64, inputs), "");
  EXPECT_EQ(model.compare(5, cache.data(), 64, inputs), "");
  EXPECT_NE(model.compare(3, out1.data(), 64, inputs), "") << "swapped outputs must differ";
  std::vector<float> poisoned = out0;
  std::memset(&poisoned[17], kPoisonByte, sizeof(float));
  EXPECT_NE(model.compare(3, poisoned.data(), 64, inputs).find("poison"), std::string::npos);
  EXPECT_NE(model.compare(5, inputs[2].data(), 64, inputs).find("unchanged"), std::string::npos);
}

TEST(ContractFuzzReference, DrawnFloatsAreDeterministicNonZeroAndBounded) {
  const auto a = draw_floats(1000, 9), b = draw_floats(1000, 9), c = draw_floats(1000, 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(std::fabs(v), 0.25f);
    EXPECT_LE(std::fabs(v), 4.0f);
  }
}

TEST(ContractFuzzReference, TheTightestProfileIsSelectedAndChangesTheMultiEnginesOutputs) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 2;
  spec.profiles = 3;
  const EngineModel model(spec);
  EXPECT_EQ(model.profile_for(InputShape{10, 4}), 1) << "[1024, 4] is the tightest";
  EXPECT_EQ(model.profile_for(InputShape{5000, 2}), 2);
  EXPECT_EQ(model.profile_for(InputShape{5000, 3}), 0);
  EXPECT_EQ(model.profile_for(InputShape{kMaxRows, 4}), 0);
  EXPECT_EQ(model.profile_for(InputShape{10, 5}), -1) << "outside every profile";
  spec.max_rows = kSmallMaxRows;
  EXPECT_EQ(EngineModel(spec).profile_for(InputShape{kSmallMaxRows + 1, 1}), -1);
  spec.profiles = 1;
  EXPECT_EQ(EngineModel(spec).profile_for(InputShape{10, 4}), 0) << "one profile: profile 0";

  std::vector<std::vector<float>> inputs(4);
  inputs[0] = draw_floats(64, 1);
  inputs[1] = draw_floats(64, 2);
  std::vector<float> under1(64);
  for (std::size_t i = 0; i < 64; ++i) {
    under1[i] = FuzzOutputsEngine::coefficient_a(1) * inputs[0][i] + FuzzOutputsEngine::coefficient_b(1, 1) * inputs[1][i];
  }
  EXPECT_EQ(model.compare(3, under1.data(), 64, inputs, 1), "");
  EXPECT_NE(model.compare(3, under1.data(), 64, inputs, 0), "") << "a call run under the wrong profile must differ";
}

TEST(ContractFuzzReference, ASideDtypeAddsABytewiseOutputOfItsElementSize) {
  EngineSpec spec;
  spec.kind = EngineKind::kMulti;
  spec.plain_outputs = 1;
  spec.alias = true;
  spec.side_dtype = ex::DataType::kInt8;
  const EngineModel model(spec);
  ASSERT_EQ(model.io_count(), 7);  // x, y, cache, t -> out0, cache_out, t_out
  EXPECT_TRUE(model.role(3).input);
  EXPECT_EQ(model.role(3).dtype, ex::DataType::kInt8);
  EXPECT_EQ(model.role(5).aliased_input, 2);
  EXPECT_EQ(model.role(6).xor_of, 3);
  EXPECT_EQ(model.role(6).element_bytes(), 1u);
  std::vector<std::vector<float>> inputs(7);
  inputs[3] = draw_floats(3, 5);  // 12 bytes, of which an int8 [11] tensor uses 11
  std::vector<unsigned char> out(11);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = reinterpret_cast<const unsigned char*>(inputs[3].data())[i] ^ 0x5A;
  EXPECT_EQ(model.compare_bytes(6, out.data(), out.size(), inputs), "");
  out[10] ^= 1;
  EXPECT_NE(model.compare_bytes(6, out.data(), out.size(), inputs).find("byte 10"), std::string::npos);
  spec.max_rows = kSmallMaxRows;
  spec.side_dtype = ex::DataType::kInt64;  // t and t_out take 8 bytes an element
  const std::size_t largest = static_cast<std::size_t>(kSmallMaxRows * kMaxCols) * sizeof(float);
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * (largest * 3 + 2 * 2 * largest));
}

TEST(ContractFuzzReference, EachPlainOutputHasItsOwnCoefficientsWhateverInputsComeFirst) {
  // FuzzOutputsEngine writes out_j at binding input_count() + j: after x, y, "cache" and "t" alike
  // (the model once counted "cache" but not "t", and expected out1's values in out0).
  for (const bool alias : {false, true}) {
    for (const ex::DataType side : {ex::DataType::kFloat32, ex::DataType::kInt8, ex::DataType::kBFloat16}) {
      for (int plain = 1; plain + (alias ? 1 : 0) <= FuzzOutputsEngine::kMaxOutputs; ++plain) {
        EngineSpec spec;
        spec.kind = EngineKind::kMulti;
        spec.plain_outputs = plain;
        spec.alias = alias;
        spec.side_dtype = side;
        spec.profiles = 3;
        const EngineModel model(spec);
        int inputs_before = 0;
        while (model.role(inputs_before).input) ++inputs_before;
        ASSERT_EQ(inputs_before, 2 + (alias ? 1 : 0) + (spec.has_side() ? 1 : 0));
        std::vector<std::vector<float>> inputs(static_cast<std::size_t>(model.io_count()));
        inputs[0] = draw_floats(32, 1);
        inputs[1] = draw_floats(32, 2);
        for (int j = 0; j < plain; ++j) {
          const int binding = inputs_before + j;
          ASSERT_FALSE(model.role(binding).input);
          ASSERT_LT(model.role(binding).aliased_input, 0);
          ASSERT_LT(model.role(binding).xor_of, 0);
          for (int profile = 0; profile < 3; ++profile) {
            std::vector<float> out(32);
            for (std::size_t i = 0; i < out.size(); ++i) {
              out[i] = FuzzOutputsEngine::coefficient_a(j) * inputs[0][i] +
                       FuzzOutputsEngine::coefficient_b(j, profile) * inputs[1][i];
            }
            EXPECT_EQ(model.compare(binding, out.data(), out.size(), inputs, profile), "")
                << "out" << j << " of " << to_string(spec) << " under profile " << profile;
            if (j + 1 < plain) {
              EXPECT_NE(model.compare(binding + 1, out.data(), out.size(), inputs, profile), "")
                  << "out" << j << "'s values must not pass as out" << j + 1 << "'s";
            }
          }
        }
      }
    }
  }
}

TEST(ContractFuzzReference, EnginesReadTheirInputsAfterTheSpinsBeforeTheirLastRead) {
  EngineSpec spec;  // elementwise: each launch reads x and y, then spins
  spec.spin_us = 500;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 0);
  spec.kernels = 2;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500) << "the second launch reads them after the first one's spin";
  spec.kind = EngineKind::kAux;
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500);
  spec.kind = EngineKind::kAliasing;  // every spin, then the update
  EXPECT_EQ(EngineModel(spec).late_read_us(), 1000);
  spec.kind = EngineKind::kMulti;  // one spin whatever the launches, then the outputs
  EXPECT_EQ(EngineModel(spec).late_read_us(), 500);
  spec.kind = EngineKind::kSum;  // the sum first, then the spins
  EXPECT_EQ(EngineModel(spec).late_read_us(), 0);

  spec.kind = EngineKind::kAliasing;  // cache (in place), x, cache_out (aliased)
  const EngineModel model(spec);
  CallPlan plan;
  plan.shape = InputShape{4, 1};
  plan.mems = {Mem::kPinned, Mem::kDevice, Mem::kPageable};
  EXPECT_FALSE(model.stages_inputs(plan)) << "an input updated in place is never staged (a host one is refused)";
  EXPECT_FALSE(model.host_outputs(plan)) << "an aliased output lives in its input's memory";
  plan.mems = {Mem::kDevice, Mem::kPageable, Mem::kDevice};
  EXPECT_TRUE(model.stages_inputs(plan));
  plan.shape = InputShape{0, 1};
  EXPECT_FALSE(model.stages_inputs(plan)) << "an empty input copies nothing";
  spec.kind = EngineKind::kElementwise;
  plan.mems = {Mem::kDevice, Mem::kManaged, Mem::kPinned};
  EXPECT_TRUE(EngineModel(spec).host_outputs(plan));
}

TEST(ContractFuzzReference, TheBudgetTakesBindingsInOrderWhileTheyFit) {
  EngineSpec spec;  // elementwise: x, y, out
  spec.max_rows = kSmallMaxRows;
  const std::size_t largest = static_cast<std::size_t>(kSmallMaxRows * kMaxCols) * sizeof(float);  // 1 MiB
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(0), 0u);
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 6 * largest) << "all three, twice each";
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(4u << 20), 4 * largest) << "x and y fit, out does not";
  spec.kind = EngineKind::kAliasing;  // cache (in place), x, cache_out (aliased): only x is staged
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * largest);
  spec.kind = EngineKind::kSum;  // x, a one-element output
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 2 * largest + 2 * sizeof(float));
  spec.kind = EngineKind::kElementwise;
  spec.max_rows = kMaxRows;
  EXPECT_EQ(EngineModel(spec).budgeted_bytes(32u << 20), 0u) << "a large engine's bindings never fit";
}

TEST(ContractFuzzReference, SharedCacheUpdatesAreExactInAnyOrder) {
  const std::vector<float> a = draw_dyadic(4096, 1), b = draw_dyadic(4096, 2), c = draw_dyadic(4096, 3);
  EXPECT_EQ(a, draw_dyadic(4096, 1));
  for (float v : a) {
    EXPECT_GE(std::fabs(v), 0.25f);
    EXPECT_LE(std::fabs(v), 4.0f);
    EXPECT_EQ(v * 4, std::round(v * 4)) << "a multiple of 1/4";
  }
  SharedCache forward, backward;
  forward.expected = draw_dyadic(4096, 9);
  backward.expected = forward.expected;
  for (int round = 0; round < 100; ++round) {  // 300 updates, in two orders
    for (const auto* x : {&a, &b, &c}) forward.apply(*x);
    for (const auto* x : {&c, &b, &a}) backward.apply(*x);
  }
  EXPECT_EQ(forward.expected, backward.expected);
  EXPECT_EQ(forward.updates, 300u);
  // cache = x - cache (kMulti): exact too, and two calls in the other order leave another cache.
  SharedCache ab, ba;
  ab.negate = ba.negate = true;
  const std::vector<float> start = draw_dyadic(4096, 9);
  ab.expected = ba.expected = start;
  ab.apply(a);
  ab.apply(b);
  ba.apply(b);
  ba.apply(a);
  EXPECT_NE(ab.expected, ba.expected);
  for (std::size_t i = 0; i < 4096; ++i) ASSERT_EQ(ab.expected[i], b[i] - (a[i] - start[i])) << i;
}

}  // namespace
}  // namespace trtet_test::fuzz
