// Loading a program through ExecuTorch's Module and preparing its inputs and outputs, without a GPU:
// the generated fake-engine programs load on any machine, so every decision of MethodIo (planned
// or not, shapes, .npy files and their errors) is checked here with host memory.
#include <gtest/gtest.h>

#include <executorch/runtime/platform/runtime.h>

#include "common/error_match.h"
#include "green/contains.h"
#include "run/engines.h"
#include "run/io.h"
#include "run/npy.h"
#include "tools/run_binary.h"

namespace trtet_run {
namespace {

namespace etr = ::executorch::runtime;

class RunIo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TRTET_RUN_HAVE_PROGRAMS) GTEST_FAIL() << "no generated programs: flatc or ExecuTorch's program.fbs missing";
    etr::runtime_init();
    ASSERT_TRUE(install_test_engine_factory().ok());
    options_.io = IoMemory::kHost;  // no GPU needed
  }

  ex::Result<std::unique_ptr<MethodIo>> prepare(const std::string& program) {
    module_ = std::make_unique<Module>(trtet_run_test::run_program(program));
    const etr::Error loaded = module_->load_method("forward");
    EXPECT_EQ(loaded, etr::Error::Ok) << "the fake engine loads without a GPU";
    return MethodIo::prepare(*module_, options_);
  }

  static std::string joined(const MethodIo& io) {
    std::string text;
    for (const std::string& line : io.describe()) text += line + "\n";
    return text;
  }

  std::string write_array(const std::string& name, const std::string& descr, std::vector<std::int64_t> shape) {
    NpyArray a;
    a.descr = descr;
    a.shape = std::move(shape);
    a.data.assign(static_cast<std::size_t>(a.numel()) * npy_item_size(descr), 0);
    const std::string path = ::testing::TempDir() + name;
    EXPECT_TRUE(write_npy(path, a, /*overwrite=*/true).ok());
    return path;
  }

  RunOptions options_;
  std::unique_ptr<Module> module_;
};

TEST_F(RunIo, UnplannedIoIsTheRunnersOwnWithTheProgramsShape) {
  auto io = prepare("run_fake");
  ASSERT_TRUE(io.ok()) << io.status().to_string();
  const std::string text = joined(**io);
  std::printf("%s", text.c_str());
  EXPECT_CONTAINS(text, "input  0: input 0  float32 [64, 4096]  host  (random)");
  EXPECT_CONTAINS(text, "input  1: input 1  float32 [64, 4096]  host  (random)");
  EXPECT_CONTAINS(text, "output 0: output 0  float32 [64, 4096]  host");
  EXPECT_EQ(text.find("planned"), std::string::npos);
}

TEST_F(RunIo, PlannedIoStaysInTheProgramsHostMemory) {
  options_.io = IoMemory::kDevice;  // asked for, but planned I/O is the program's: no device buffer is made
  auto io = prepare("run_fake_planned");
  ASSERT_TRUE(io.ok()) << io.status().to_string();
  const std::string text = joined(**io);
  EXPECT_CONTAINS(text, "input  0: input 0  float32 [64, 4096]  planned by the program  (random)");
  EXPECT_CONTAINS(text, "output 0: output 0  float32 [64, 4096]  planned by the program");
}

TEST_F(RunIo, AShapeWithinTheBoundIsUsedForRandomInputs) {
  options_.shapes = {"8x64"};
  auto io = prepare("run_fake");
  ASSERT_TRUE(io.ok()) << io.status().to_string();
  EXPECT_CONTAINS(joined(**io), "input  1: input 1  float32 [8, 64]");
}

TEST_F(RunIo, AShapeBeyondTheProgramsBoundIsRefusedNamingTheInput) {
  options_.shapes = {"128x4096"};
  auto io = prepare("run_fake");
  ASSERT_FALSE(io.ok());
  TRTET_EXPECT_ERROR_SAYS(io.status(), "setting input 0 (input 0, [128, 4096])");
}

TEST_F(RunIo, NpyInputsGiveTheirShapeAndName) {
  const std::string x = write_array("io_x.npy", "<f4", {4, 16});
  options_.inputs = {x, x};
  auto io = prepare("run_fake");
  ASSERT_TRUE(io.ok()) << io.status().to_string();
  EXPECT_CONTAINS(joined(**io), "input  0: input 0  float32 [4, 16]  host  (" + x + ")");
}

TEST_F(RunIo, TheWrongNumberOfNpyInputsIsRefused) {
  options_.inputs = {write_array("io_one.npy", "<f4", {4, 16})};
  auto io = prepare("run_fake");
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.status().code(), ex::ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(io.status(), "takes 2 inputs; 1 --input files were given");
}

TEST_F(RunIo, AnNpyInputOfAnotherDtypeIsRefused) {
  const std::string ints = write_array("io_int.npy", "<i8", {4, 16});
  options_.inputs = {ints, ints};
  auto io = prepare("run_fake");
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.status().code(), ex::ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(io.status(), "input 0 (input 0) is float32; " + ints + " holds '<i8'");
}

TEST_F(RunIo, TwoShapesForTwoInputsAndThreeAreRefused) {
  options_.shapes = {"8x64", "8x64", "8x64"};
  auto io = prepare("run_fake");
  ASSERT_FALSE(io.ok());
  TRTET_EXPECT_ERROR_SAYS(io.status(), "give --shape once for all or once per input (got 3)");
}

// A .npy dimension past ExecuTorch's 32-bit sizes is refused, never cut (4294967297 would become 1).
TEST_F(RunIo, NpyDimensionsPastExecuTorchsSizesAreRefusedNotTruncated) {
  const std::string x = write_array("io_wide.npy", "<f4", {4294967297, 0});
  options_.inputs = {x, x};
  auto io = prepare("run_fake");
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.status().code(), ex::ErrorCode::kInvalidArgument);
  TRTET_EXPECT_ERROR_SAYS(io.status(), "dimension 0 is 4294967297");
}

TEST(RunIoSizes, TensorSizesAndBytesAreChecked) {
  EXPECT_FALSE(tensor_sizes({2147483648LL}, "x").ok());
  EXPECT_FALSE(tensor_sizes({-1}, "x").ok());
  auto sizes = tensor_sizes({2147483647LL, 3}, "x");
  ASSERT_TRUE(sizes.ok());
  auto bytes = tensor_bytes(*sizes, ScalarType::Float, "x");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::size_t{2147483647} * 3 * 4);
  std::vector<::executorch::aten::SizesType> huge(4, 2147483647);
  EXPECT_FALSE(tensor_bytes(huge, ScalarType::Float, "x").ok());
}

}  // namespace
}  // namespace trtet_run
