// CPU tests of the test-engine spec parser and of the host-only FakeEngine made by the factory.
#include "engines/test_engine_factory.h"

#include <gtest/gtest.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "engines/fake_engine.h"

namespace trtet_test {
namespace {

TEST(TestEngineSpec, ParsesElementwiseWithEveryKey) {
  auto spec = parse_test_engine_spec("elementwise min=1x4 max=64x4096 a=1.5 b=-3 spin_us=50000 kernels=3 record_sms=1");
  TRTET_ASSERT_OK(spec);
  EXPECT_EQ(spec->kind, TestEngineSpec::Kind::kElementwise);
  EXPECT_EQ(spec->min_shape, (Shape{1, 4}));
  EXPECT_EQ(spec->max_shape, (Shape{64, 4096}));
  EXPECT_FLOAT_EQ(spec->options.a, 1.5f);
  EXPECT_FLOAT_EQ(spec->options.b, -3.0f);
  EXPECT_EQ(spec->options.spin_us, 50000);
  EXPECT_EQ(spec->options.kernels, 3);
  EXPECT_TRUE(spec->options.record_sms);
  EXPECT_FALSE(spec->options.marker_on_request);
}

TEST(TestEngineSpec, RecordSmsProbeRecordsWithTheMarkerOnlyDuringAProbe) {
  auto spec = parse_test_engine_spec("waves blocks=32 spin_us=25 record_sms=probe");
  TRTET_ASSERT_OK(spec);
  EXPECT_TRUE(spec->options.record_sms);
  EXPECT_TRUE(spec->options.marker_on_request);
  auto off = parse_test_engine_spec("waves blocks=32 record_sms=0");
  TRTET_ASSERT_OK(off);
  EXPECT_FALSE(off->options.record_sms);
  EXPECT_FALSE(off->options.marker_on_request);
}

TEST(TestEngineSpec, FaultIfAsksForTheFaultingKernel) {
  auto plain = parse_test_engine_spec("elementwise n=4");
  TRTET_ASSERT_OK(plain);
  EXPECT_FALSE(plain->options.fault);
  auto spec = parse_test_engine_spec("elementwise n=4 fault_if=-7.25");
  TRTET_ASSERT_OK(spec);
  EXPECT_TRUE(spec->options.fault);
  EXPECT_FLOAT_EQ(spec->options.fault_if, -7.25f);
}

TEST(TestEngineSpec, ProfilesAddOptimizationProfilesAfterMinMax) {
  auto spec = parse_test_engine_spec("elementwise min=1x4 max=16x4 profiles=17x4:256x4,1x4:256x4");
  TRTET_ASSERT_OK(spec);
  ASSERT_EQ(spec->profiles.size(), 2u);
  EXPECT_EQ(spec->profiles[0].min, (Shape{17, 4}));
  EXPECT_EQ(spec->profiles[0].max, (Shape{256, 4}));
  EXPECT_EQ(spec->profiles[1].min, (Shape{1, 4}));
  EXPECT_EQ(spec->profiles[1].max, (Shape{256, 4}));
  auto engine = make_test_engine("fake min=1x4 max=16x4 profiles=17x4:256x4", 0);
  TRTET_ASSERT_OK(engine);
  EXPECT_EQ((*engine)->profile_count(), 2);
  EXPECT_EQ((*engine)->input_bounds(1, 1).max, (Shape{256, 4}));
  EXPECT_EQ((*engine)->input_bounds(0, 1).max, (Shape{16, 4}));
}

TEST(TestEngineSpec, BadProfilesAreRefusedNamingTheWord) {
  for (const char* spec : {"elementwise min=1x4 max=16x4 profiles=17x4", "elementwise min=1x4 max=16x4 profiles=9x4:8x4",
                           "elementwise min=1x4 max=16x4 profiles=1:8", "elementwise min=1x4 max=16x4 profiles=1x4:8"}) {
    auto parsed = parse_test_engine_spec(spec);
    ASSERT_FALSE(parsed.ok()) << spec;
    TRTET_EXPECT_ERROR(parsed, ErrorCode::kInvalidProgram, "profile") << spec;
  }
}

TEST(TestEngineSpec, DefaultsAndShorthands) {
  auto plain = parse_test_engine_spec("  elementwise \n");
  TRTET_ASSERT_OK(plain);
  EXPECT_EQ(plain->min_shape, (Shape{1}));
  EXPECT_EQ(plain->max_shape, (Shape{65536}));
  EXPECT_EQ(plain->options.kernels, 1);
  EXPECT_EQ(plain->options.spin_us, 0);
  EXPECT_FALSE(plain->options.record_sms);

  auto aliasing = parse_test_engine_spec("aliasing n=1024");
  TRTET_ASSERT_OK(aliasing);
  EXPECT_EQ(aliasing->kind, TestEngineSpec::Kind::kAliasing);
  EXPECT_EQ(aliasing->min_shape, (Shape{1024}));
  EXPECT_EQ(aliasing->max_shape, (Shape{1024}));
  EXPECT_EQ(aliasing->alias, ex::engine::AliasKind::kKvCacheUpdate);

  auto user = parse_test_engine_spec("aliasing shape=4x8 alias=user");
  TRTET_ASSERT_OK(user);
  EXPECT_EQ(user->min_shape, (Shape{4, 8}));
  EXPECT_EQ(user->alias, ex::engine::AliasKind::kUser);

  auto lone_max = parse_test_engine_spec("sum max=8x8");
  TRTET_ASSERT_OK(lone_max);
  EXPECT_EQ(lone_max->min_shape, (Shape{1, 1}));

  auto zero = parse_test_engine_spec("aux min=0x4 max=16x4");
  TRTET_ASSERT_OK(zero);
  EXPECT_EQ(zero->kind, TestEngineSpec::Kind::kAux);
  EXPECT_EQ(zero->min_shape, (Shape{0, 4}));
}

TEST(TestEngineSpec, RejectsMalformedSpecsNamingTheWord) {
  struct Case {
    const char* spec;
    const char* fragment;
  };
  const Case cases[] = {
      {"", "empty spec"},
      {"conv n=4", "conv"},
      {"elementwise n", "\"n\""},
      {"elementwise =4", "=4"},
      {"elementwise size=4", "size=4"},
      {"elementwise n=4 n=8", "repeated"},
      {"elementwise n=-4", "n=-4"},
      {"elementwise min=1x4 max=8", "rank"},
      {"elementwise min=8 max=4", "min exceeds max"},
      {"elementwise n=4 min=1", "cannot be combined"},
      {"elementwise kernels=0", "kernels=0"},
      {"elementwise record_sms=yes", "record_sms=yes"},
      {"elementwise a=two", "a=two"},
      {"elementwise alias=user", "does not take"},
      {"sum n=4 fault_if=1", "does not take"},
      {"elementwise fault_if=x", "fault_if=x"},
      {"fake spin_us=4", "does not take"},
      {"aliasing alias=other", "alias=other"},
      {"sum min=1x2x3x4x5x6x7x8x9", "too many dimensions"},
      {"sum min=1xx2 max=4x4", "1xx2"},
  };
  for (const Case& c : cases) {
    auto spec = parse_test_engine_spec(c.spec);
    ASSERT_FALSE(spec.ok()) << c.spec;
    TRTET_EXPECT_ERROR(spec, ErrorCode::kInvalidProgram, c.fragment) << c.spec;
  }
}

TEST(TestEngineFactory, FakeNeedsNoGpu) {
  auto engine = make_test_engine("fake min=1x4 max=8x4", 0);
  TRTET_ASSERT_OK(engine);
  const ex::engine::Engine& e = **engine;
  ASSERT_EQ(e.io_count(), 3);
  EXPECT_EQ(e.io(0).name, "x");
  EXPECT_EQ(e.io(1).name, "y");
  EXPECT_EQ(e.io(2).name, "out");
  EXPECT_TRUE(e.io(0).is_input);
  EXPECT_FALSE(e.io(2).is_input);
  EXPECT_EQ(e.io(0).max_shape, (Shape{8, 4}));
  EXPECT_TRUE(e.aliases().empty());
  EXPECT_NE(dynamic_cast<const FakeEngine*>(&e), nullptr);
}

TEST(TestEngineFactory, KernelEnginesWithoutGpuReportNoDevice) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: covered by test_engines_gpu_test";
  auto engine = make_test_engine("elementwise n=16", 0);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), ErrorCode::kNoDevice) << engine.status().to_string();
}

TEST(FakeEngine, RecordsCallsAndChecksTheProfile) {
  auto engine = FakeEngine::elementwise(Shape{1, 4}, Shape{8, 4});
  EXPECT_EQ(engine->set_input_shape(0, Shape{9, 4}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(engine->set_input_shape(0, Shape{4}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(engine->set_input_shape(2, Shape{2, 4}).code(), ErrorCode::kInvalidArgument);
  TRTET_ASSERT_OK(engine->set_input_shape(0, Shape{2, 4}));
  TRTET_ASSERT_OK(engine->set_input_shape(1, Shape{2, 4}));
  auto unresolved = engine->infer_shapes();
  TRTET_ASSERT_OK(unresolved);
  EXPECT_EQ(*unresolved, 0);
  auto out = engine->output_shape(2);
  TRTET_ASSERT_OK(out);
  EXPECT_EQ(*out, (Shape{2, 4}));
  alignas(256) static char storage[3][256];
  EXPECT_EQ(engine->set_tensor_address(0, storage[0] + 4).code(), ErrorCode::kInvalidArgument);  // misaligned
  for (int i = 0; i < 3; ++i) TRTET_ASSERT_OK(engine->set_tensor_address(i, storage[i]));
  TRTET_ASSERT_OK(engine->enqueue(nullptr));
  EXPECT_EQ(engine->enqueue_count(), 1u);
  EXPECT_EQ(engine->count(FakeEngine::Call::Op::kEnqueue), 1u);
  EXPECT_EQ(engine->count(FakeEngine::Call::Op::kSetInputShape), 5u);
  EXPECT_EQ(engine->count(FakeEngine::Call::Op::kSetTensorAddress), 4u);
  EXPECT_EQ(engine->bound_address(1), storage[1]);
}

}  // namespace
}  // namespace trtet_test
