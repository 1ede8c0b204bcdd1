// CPU tests of the waves test engine's spec (Note [test engine spec]): the kind, its blocks= key,
// and that the existing kinds do not take it.
#include <gtest/gtest.h>

#include "common/error_match.h"
#include "engines/test_engine_factory.h"

namespace trtet_test {
namespace {

TEST(WavesSpec, BlocksAndSpin) {
  auto spec = parse_test_engine_spec("waves min=1x4 max=64x1024 blocks=32 spin_us=25 kernels=2");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->kind, TestEngineSpec::Kind::kWaves);
  EXPECT_EQ(spec->blocks, 32);
  EXPECT_EQ(spec->options.spin_us, 25);
  EXPECT_EQ(spec->options.kernels, 2);
  EXPECT_EQ(spec->max_shape.rank, 2);
}

TEST(WavesSpec, DefaultsToSixtyFourBlocks) {
  auto spec = parse_test_engine_spec("waves");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->blocks, 64);
}

TEST(WavesSpec, BadBlocksAreRefused) {
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("waves blocks=0").status(), "blocks must be 1..65536");
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("waves blocks=65537").status(), "blocks must be 1..65536");
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("waves blocks=x").status(), "bad integer");
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("waves blocks=4 blocks=4").status(), "repeated key");
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("elementwise blocks=4").status(), "does not take");
  TRTET_EXPECT_ERROR_SAYS(parse_test_engine_spec("fake blocks=4").status(), "does not take");
}

TEST(WavesSpec, ExistingSpecsAreUnchanged) {
  auto spec = parse_test_engine_spec("elementwise min=1x4 max=64x4096 spin_us=20000 record_sms=1");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->kind, TestEngineSpec::Kind::kElementwise);
  EXPECT_TRUE(spec->options.record_sms);
}

}  // namespace
}  // namespace trtet_test
