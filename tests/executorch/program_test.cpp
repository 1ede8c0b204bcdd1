// .pte programs made at build time (flatc + ExecuTorch's program.fbs), loaded through the real
// ExecuTorch runtime: Module, and Program/Method. No GPU needed.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include "common/gpu.h"
#include "executorch/module_test_support.h"

namespace trtet_test {
namespace {

class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_test_programs()) GTEST_SKIP() << "no test programs: flatc or ExecuTorch's program.fbs was not found at configure";
    ensure_executorch_runtime();
    clear_log();
  }
};

std::vector<etr::EValue> host_inputs(std::vector<float>& x, std::vector<float>& y) {
  static std::vector<::executorch::extension::TensorPtr> keep;
  keep = {::executorch::extension::from_blob(x.data(), {8, 64}), ::executorch::extension::from_blob(y.data(), {8, 64})};
  return {etr::EValue(*keep[0]), etr::EValue(*keep[1])};
}

TEST_F(ProgramTest, ModuleLoadsTheProgramAndSeesOneTensorRTDelegate) {
  Module module(program_path("elementwise"));
  ASSERT_EQ(module.load(), Error::Ok);
  auto names = module.method_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->count("forward"), 1u);
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_inputs(), 2u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  EXPECT_EQ(meta->num_backends(), 1u);
  EXPECT_TRUE(meta->uses_backend("TensorRTBackend"));
  auto input = meta->input_tensor_meta(0);
  ASSERT_TRUE(input.ok());
  EXPECT_EQ(input->scalar_type(), ::executorch::aten::ScalarType::Float);
  ASSERT_EQ(input->sizes().size(), 2u);
  EXPECT_EQ(input->sizes()[0], 8);
  EXPECT_EQ(input->sizes()[1], 64);
}

TEST_F(ProgramTest, ModuleLoadsTheMethodAndTheBackendReadsTheCompileSpec) {
  RecordingFactory factory;
  Module module(program_path("fake"));
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  EXPECT_TRUE(module.is_method_loaded("forward"));
  const auto requests = factory.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].spec, "fake min=1x4 max=64x4096");
  EXPECT_EQ(requests[0].method_name, "forward");
  EXPECT_EQ(requests[0].io_bindings, 3u);
  EXPECT_EQ(requests[0].budget, std::optional<std::uint64_t>(1048576)) << "from the program's compile spec";
}

TEST_F(ProgramTest, ModuleLoadTimeOptionsReachTheBackendAndTakePrecedence) {
  RecordingFactory factory;
  etr::BackendOptions<2> options;
  ASSERT_EQ(options.set_option("weight_streaming_budget", 4096), Error::Ok);
  etr::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options("TensorRTBackend", options.view()), Error::Ok);
  Module module(program_path("fake"));
  ASSERT_EQ(module.load(map), Error::Ok);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << captured_log();
  ASSERT_EQ(factory.requests().size(), 1u);
  EXPECT_EQ(factory.requests()[0].budget, std::optional<std::uint64_t>(4096));
}

TEST_F(ProgramTest, ModuleMalformedLoadTimeOptionFailsTheMethodLoad) {
  RecordingFactory factory;
  etr::BackendOptions<1> options;
  ASSERT_EQ(options.set_option("weight_streaming_budget", "12 MB"), Error::Ok);
  etr::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options("TensorRTBackend", options.view()), Error::Ok);
  Module module(program_path("fake"));
  ASSERT_EQ(module.load(map), Error::Ok);
  EXPECT_EQ(module.load_method("forward"), Error::InvalidArgument);
  EXPECT_NE(captured_log().find("12 MB"), std::string::npos) << captured_log();
}

TEST_F(ProgramTest, ModuleWithoutEngineFactoryFailsTheMethodLoadClearly) {
  ex::ScopedEngineFactory none{ex::EngineFactory()};
  Module module(program_path("fake"));
  EXPECT_EQ(module.load_method("forward"), Error::NotSupported);
  EXPECT_NE(captured_log().find("no engine factory is installed"), std::string::npos) << captured_log();
}

TEST_F(ProgramTest, MalformedBlobInTheProgramFailsTheMethodLoad) {
  RecordingFactory factory;
  Module module(program_path("malformed_blob"));
  ASSERT_EQ(module.load(), Error::Ok) << "the program itself is well formed";
  EXPECT_EQ(module.load_method("forward"), Error::InvalidProgram);
  EXPECT_NE(captured_log().find("TensorRTBackend init: InvalidProgram"), std::string::npos) << captured_log();
  EXPECT_TRUE(factory.requests().empty());
}

TEST_F(ProgramTest, MalformedCompileSpecInTheProgramFailsTheMethodLoad) {
  RecordingFactory factory;
  Module module(program_path("bad_budget_spec"));
  EXPECT_EQ(module.load_method("forward"), Error::InvalidProgram);
  EXPECT_NE(captured_log().find("-5"), std::string::npos) << captured_log();
}

TEST_F(ProgramTest, ModuleExecuteWithoutGpuReportsTheMissingGpu) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: this checks the GPU-less report";
  RecordingFactory factory;
  Module module(program_path("fake"));
  std::vector<float> x(8 * 64, 1.0f), y(8 * 64, 2.0f);
  auto outputs = module.forward(host_inputs(x, y));
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.error(), Error::AccessFailed);
  EXPECT_NE(captured_log().find("no usable GPU when the method was loaded"), std::string::npos) << captured_log();
}

TEST_F(ProgramTest, ProgramAndMethodLoadTheDelegate) {
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("fake"), Error::Ok);
  EXPECT_EQ(direct.program->num_methods(), 1u);
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << captured_log();
  EXPECT_EQ(method->inputs_size(), 2u);
  EXPECT_EQ(method->outputs_size(), 1u);
  ASSERT_EQ(factory.requests().size(), 1u);
  EXPECT_EQ(factory.requests()[0].budget, std::optional<std::uint64_t>(1048576));
}

TEST_F(ProgramTest, ProgramAndMethodPassLoadTimeOptions) {
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("fake"), Error::Ok);
  etr::BackendOptions<1> options;
  ASSERT_EQ(options.set_option("weight_streaming_budget", "65536"), Error::Ok);
  etr::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options("TensorRTBackend", options.view()), Error::Ok);
  auto method = direct.load_method(&map);
  ASSERT_TRUE(method.ok()) << captured_log();
  EXPECT_EQ(factory.requests().at(0).budget, std::optional<std::uint64_t>(65536));
}

TEST_F(ProgramTest, ProgramAndMethodExecuteWithoutGpuReportsTheMissingGpu) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: this checks the GPU-less report";
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("fake"), Error::Ok);
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << captured_log();
  std::vector<float> x(8 * 64, 1.0f), y(8 * 64, 2.0f);
  auto inputs = host_inputs(x, y);
  ASSERT_EQ(method->set_input(inputs[0], 0), Error::Ok);
  ASSERT_EQ(method->set_input(inputs[1], 1), Error::Ok);
  clear_log();
  EXPECT_EQ(method->execute(), Error::AccessFailed);
  EXPECT_NE(captured_log().find("TensorRTBackend execute: NoDevice"), std::string::npos) << captured_log();
}

TEST_F(ProgramTest, ProgramWithCallerBoundIoLoadsAndBindsTheCallersMemory) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: the GPU suite runs this program";
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("elementwise_device"), Error::Ok);
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << captured_log();
  EXPECT_EQ(direct.planned.size(), 0u) << "the program plans no memory for its inputs and outputs";
  ASSERT_EQ(factory.requests().size(), 1u);
  EXPECT_EQ(factory.requests()[0].spec, "elementwise min=1x4 max=64x4096 spin_us=20000 record_sms=1");
  std::vector<float> x(8 * 64, 1.0f), y(8 * 64, 2.0f), out(8 * 64);
  auto inputs = host_inputs(x, y);
  ASSERT_EQ(method->set_input(inputs[0], 0), Error::Ok);
  ASSERT_EQ(method->set_input(inputs[1], 1), Error::Ok);
  ASSERT_EQ(method->set_output_data_ptr(out.data(), out.size() * sizeof(float), 0), Error::Ok);
  EXPECT_EQ(method->execute(), Error::AccessFailed);
}

TEST_F(ProgramTest, ProgramAndMethodMalformedBlobFailsTheLoad) {
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("malformed_blob"), Error::Ok);
  auto method = direct.load_method();
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::InvalidProgram);
}

}  // namespace
}  // namespace trtet_test
