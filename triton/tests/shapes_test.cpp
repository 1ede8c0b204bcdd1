// Dynamic shapes without a server or a GPU (Note [dynamic shapes] in triton/src/program_shapes.h):
// the request-shape rule, and the program reader on the test programs (TRTET_TRITON_PROGRAMS, as
// scripts/test-triton sets it) and on damaged copies of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/flatbuffer_edit.h"
#include "data_types.h"
#include "program_shapes.h"
#include "shape_rule.h"

namespace {

using trtet_triton::check_request_shape;
using trtet_triton::Dynamism;
using trtet_triton::method_dynamism;

std::string check(std::vector<std::int64_t> dims, std::vector<std::int64_t> config, bool dynamic,
                  std::vector<std::int64_t> shape) {
  return check_request_shape(dims, config, dynamic, shape.data(), static_cast<std::uint32_t>(shape.size()));
}

TEST(ShapeRule, AStaticTensorTakesItsShapeOnly) {
  EXPECT_EQ(check({8, 64}, {8, 64}, false, {8, 64}), "");
  EXPECT_EQ(check({8, 64}, {8, 64}, false, {4, 64}), "has shape [4, 64]; the program takes [8, 64]");
}

TEST(ShapeRule, ADynamicTensorTakesAnyShapeWithinItsBound) {
  for (std::vector<std::int64_t> s : {std::vector<std::int64_t>{1, 4}, {8, 64}, {3, 17}, {0, 64}}) {
    EXPECT_EQ(check({8, 64}, {-1, -1}, true, s), "") << s[0] << "x" << s[1];
  }
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {9, 64}),
            "has shape [9, 64]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): dim 0 is 9, above its "
            "bound 8");
  // The reason names the first dim that breaks the rule, not merely the bound: [9, 35] is not "within [8, 64]"
  // read as a range.
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {8, 65}),
            "has shape [8, 65]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): dim 1 is 65, above its "
            "bound 64");
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {9, 35}),
            "has shape [9, 35]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): dim 0 is 9, above its "
            "bound 8");
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {8}),  // another rank
            "has shape [8]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): 1 dims given");
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {8, 64, 1}),
            "has shape [8, 64, 1]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): 3 dims given");
  EXPECT_EQ(check({8, 64}, {-1, -1}, true, {-1, 64}),  // a negative size
            "has shape [-1, 64]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): dim 0 is -1, negative");
}

TEST(ShapeRule, AConfigsFixedDimIsExact) {
  EXPECT_EQ(check({8, 64}, {4, -1}, true, {4, 33}), "");
  EXPECT_EQ(check({8, 64}, {4, -1}, true, {3, 33}),
            "has shape [3, 33]; the program takes 2 dims within [4, 64] (config dims [4, -1]): dim 0 is 3 where the "
            "config fixes 4");
  EXPECT_EQ(check({8, 64}, {4, -1}, true, {4, 65}),
            "has shape [4, 65]; the program takes 2 dims within [4, 64] (config dims [4, -1]): dim 1 is 65, above its "
            "bound 64");
  EXPECT_EQ(check({8, 64}, {4, -1}, true, {5, 10}),  // a fixed dim above it is named by the config, not the bound
            "has shape [5, 10]; the program takes 2 dims within [4, 64] (config dims [4, -1]): dim 0 is 5 where the "
            "config fixes 4");
}

// A refusal names the type a request gave in the config's words, beside the program's.
TEST(DataTypes, EachTritonTypeIsNamedAsTheConfigNamesIt) {
  EXPECT_STREQ(trtet_triton::config_name_of(TRITONSERVER_TYPE_INT32), "TYPE_INT32");
  EXPECT_STREQ(trtet_triton::config_name_of(TRITONSERVER_TYPE_FP32), "TYPE_FP32");
  EXPECT_STREQ(trtet_triton::config_name_of(TRITONSERVER_TYPE_BF16), "TYPE_BF16");
  EXPECT_STREQ(trtet_triton::config_name_of(TRITONSERVER_TYPE_BYTES), "a type this backend does not carry");
  for (const auto et : {::executorch::aten::ScalarType::Float, ::executorch::aten::ScalarType::Long,
                        ::executorch::aten::ScalarType::Bool}) {
    const trtet_triton::DataType* d = trtet_triton::data_type_of(et);
    ASSERT_NE(d, nullptr);
    EXPECT_STREQ(trtet_triton::config_name_of(d->triton), d->config);  // the two lookups agree
  }
}

std::string program(const char* name) {
  const char* dir = std::getenv("TRTET_TRITON_PROGRAMS");
  return dir == nullptr ? std::string() : std::string(dir) + "/" + name + ".pte";
}

std::vector<char> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(ProgramShapes, ReadsEachTensorsDynamismFromTheProgram) {
  if (program("triton_small").empty()) GTEST_SKIP() << "TRTET_TRITON_PROGRAMS is not set (scripts/test-triton sets it)";
  std::vector<Dynamism> in, out;
  std::string why;
  ASSERT_TRUE(method_dynamism(program("triton_small"), "forward", in, out, why)) << why;
  EXPECT_EQ(in, (std::vector<Dynamism>{Dynamism::kDynamicBound, Dynamism::kDynamicBound}));
  EXPECT_EQ(out, (std::vector<Dynamism>{Dynamism::kDynamicBound}));
  ASSERT_TRUE(method_dynamism(program("triton_small_static"), "forward", in, out, why)) << why;
  EXPECT_EQ(in, (std::vector<Dynamism>{Dynamism::kStatic, Dynamism::kStatic}));
  EXPECT_EQ(out, (std::vector<Dynamism>{Dynamism::kStatic}));
  EXPECT_FALSE(method_dynamism(program("triton_small"), "backward", in, out, why));
  EXPECT_EQ(why, "the program has no execution plan named 'backward'");
  EXPECT_FALSE(method_dynamism(program("no_such_program"), "forward", in, out, why));
  EXPECT_NE(why.find("cannot open"), std::string::npos) << why;
}

TEST(ProgramShapes, DamagedProgramsAreRefusedOrReadNeverOutOfBounds) {
  // Every truncation, and bytes changed at random: the reader answers (true or false with a reason)
  // without reading outside the file (the sanitizer builds check that part).
  if (program("triton_small").empty()) GTEST_SKIP() << "TRTET_TRITON_PROGRAMS is not set (scripts/test-triton sets it)";
  const std::vector<char> bytes = read(program("triton_small"));
  ASSERT_GT(bytes.size(), 64u);
  const std::string path = ::testing::TempDir() + "/trtet_damaged.pte";
  auto attempt = [&](const std::vector<char>& data) {
    write(path, data);
    std::vector<Dynamism> in, out;
    std::string why;
    const bool ok = method_dynamism(path, "forward", in, out, why);
    if (!ok) {
      EXPECT_FALSE(why.empty());
    }
    return ok;
  };
  int refused = 0;
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    refused += attempt(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n))) ? 0 : 1;
  }
  EXPECT_GT(refused, 0);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<char> damaged = bytes;
    for (int k = 0; k < 4; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    attempt(damaged);
  }
}

namespace fb = trtet_test::flatbuffer;

TEST(ProgramShapes, ReadsEachTensorsScalarTypeEvenOneExecuTorchDoesNotKnow) {
  if (program("triton_small").empty()) GTEST_SKIP() << "TRTET_TRITON_PROGRAMS is not set (scripts/test-triton sets it)";
  std::vector<char> bytes = read(program("triton_small"));
  std::vector<Dynamism> in, out;
  std::string why;
  trtet_triton::TensorTypes types;
  ASSERT_TRUE(method_dynamism(program("triton_small"), "forward", in, out, why, &types)) << why;
  EXPECT_EQ(types.inputs, (std::vector<std::int8_t>{6, 6}));  // ScalarType::Float
  EXPECT_EQ(types.outputs, (std::vector<std::int8_t>{6}));
  // Input 0's tensor: execution_plan[0].values[inputs[0]].val; its scalar_type byte set to -37, which
  // ExecuTorch's verifier lets through on a dynamic tensor and MethodMeta aborts on.
  const std::size_t plan = fb::first_plan(bytes);
  const std::size_t first = fb::target(bytes, plan, 3) + 4;
  const std::size_t evalue = fb::element(bytes, fb::target(bytes, plan, 2), fb::u32_at(bytes, first));
  const std::size_t tensor = fb::target(bytes, evalue, 1);
  const std::uint16_t type_at = fb::field_offset(bytes, tensor, 0);
  ASSERT_NE(type_at, 0) << "the test program writes its tensors' type";
  bytes[tensor + type_at] = static_cast<char>(-37);
  const std::string path = ::testing::TempDir() + "/trtet_bad_type.pte";
  write(path, bytes);
  ASSERT_TRUE(method_dynamism(path, "forward", in, out, why, &types)) << why;
  EXPECT_EQ(types.inputs, (std::vector<std::int8_t>{-37, 6}));
}

TEST(ProgramShapes, ADelegateWithoutAFieldExecuTorchReadsIsRefused) {
  if (program("triton_small").empty()) GTEST_SKIP() << "TRTET_TRITON_PROGRAMS is not set (scripts/test-triton sets it)";
  const std::string path = ::testing::TempDir() + "/trtet_no_field.pte";
  // `bytes` with field `field` of the table at `table` left out: refused, naming it.
  auto refused_without = [&](std::vector<char> bytes, std::size_t table, int field, const std::string& says) {
    fb::drop_field(bytes, table, field);
    write(path, bytes);
    std::vector<Dynamism> in, out;
    std::string why;
    EXPECT_FALSE(method_dynamism(path, "forward", in, out, why)) << says;
    EXPECT_NE(why.find("delegate 0 of method 'forward' " + says), std::string::npos) << why;
  };
  auto first_delegate = [](const std::vector<char>& bytes) {
    return fb::element(bytes, fb::target(bytes, fb::first_plan(bytes), 7), 0);  // delegates[0]
  };
  const std::vector<char> small = read(program("triton_small"));
  refused_without(small, first_delegate(small), 0, "lacks its backend id");
  refused_without(small, first_delegate(small), 1, "lacks its processed data");
  refused_without(small, first_delegate(small), 2, "lacks its compile specs");
  // A program whose delegate has compile specs (the .pte fuzzer's seed, made by the test suite).
  const std::vector<char> specced = read(std::string(TRTET_SOURCE_DIR) + "/tests/fuzz/pte/programs/bad_budget_spec.pte");
  ASSERT_GT(specced.size(), 64u);
  const std::size_t specs = fb::target(specced, first_delegate(specced), 2);
  ASSERT_GT(fb::u32_at(specced, specs), 0u) << "bad_budget_spec.pte's delegate has compile specs";
  std::vector<Dynamism> in, out;
  std::string why;
  const std::string whole = ::testing::TempDir() + "/trtet_specced.pte";
  write(whole, specced);
  ASSERT_TRUE(method_dynamism(whole, "forward", in, out, why)) << why;  // whole, it passes
  refused_without(specced, fb::element(specced, specs, 0), 0, "lacks a compile spec's key");
  refused_without(specced, fb::element(specced, specs, 0), 1, "lacks a compile spec's value");
}

}  // namespace
