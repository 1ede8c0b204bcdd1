// Programs of today's device-planned exports (tests/executorch/CMakeLists.txt describes
// each): they parse, their MethodMeta reports the CUDA-tagged arena, their CPU operators resolve
// against ExecuTorch's kernel library, and what loading one through Module does without a GPU.
// No GPU needed.
#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/runtime/core/device_allocator.h>
#include <executorch/runtime/executor/program.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "executorch/module_test_support.h"

namespace trtet_test {
namespace {

using ::executorch::runtime::etensor::DeviceType;

constexpr std::int64_t kMiB = 1 << 20;

struct Arena {
  std::int64_t bytes;
  DeviceType type;
  int index;
};

struct Expected {
  const char* name;
  std::vector<Arena> arenas;  ///< memory_planned_buffer_size/_device, in order (memory_id 1, 2)
  std::int64_t rows, cols;    ///< every input's upper bound
  const char* note;
};

// One MiB a tensor ([64, 4096] float32), four for the _4m pair ([1024, 1024]).
const std::vector<Expected>& expected_programs() {
  static const std::vector<Expected> programs = {
      {"boundary_copies", {{3 * kMiB, DeviceType::CPU, 0}, {3 * kMiB, DeviceType::CUDA, 0}}, 64, 4096,
       "x, y, out on the host; x_d, y_d, out_d on cuda:0"},
      {"skipped_copies", {{0, DeviceType::CPU, 0}, {1 * kMiB, DeviceType::CUDA, 0}}, 64, 4096,
       "inputs are the caller's device tensors (not planned); out_d on cuda:0"},
      {"cpu_ops_around", {{5 * kMiB, DeviceType::CPU, 0}, {3 * kMiB, DeviceType::CUDA, 0}}, 64, 4096,
       "x, y, x+x, out, out+y on the host"},
      {"boundary_copies_cuda1", {{3 * kMiB, DeviceType::CPU, 0}, {3 * kMiB, DeviceType::CUDA, 1}}, 64, 4096,
       "the arena on cuda:1"},
      {"bad_device_arena", {{3 * kMiB, DeviceType::CPU, 0}, {3 * kMiB, DeviceType::CUDA, 7}}, 64, 4096,
       "the arena on cuda:7"},
      {"boundary_twin_host", {{3 * kMiB, DeviceType::CPU, 0}}, 64, 4096, "no device planning"},
      {"boundary_copies_4m", {{12 * kMiB, DeviceType::CPU, 0}, {12 * kMiB, DeviceType::CUDA, 0}}, 1024, 1024,
       "4 MiB tensors"},
      {"boundary_twin_host_4m", {{12 * kMiB, DeviceType::CPU, 0}}, 1024, 1024, "4 MiB tensors, no device planning"},
  };
  return programs;
}

class DevicePlannedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_test_programs()) GTEST_SKIP() << "no test programs: flatc or ExecuTorch's program.fbs was not found at configure";
    ensure_executorch_runtime();
    clear_log();
  }
};

void expect_meta(const etr::MethodMeta& meta, const Expected& program) {
  SCOPED_TRACE(std::string(program.name) + " (" + program.note + ")");
  EXPECT_EQ(meta.num_inputs(), 2u);
  EXPECT_EQ(meta.num_outputs(), 1u);
  EXPECT_TRUE(meta.uses_backend("TensorRTBackend"));
  for (std::size_t i = 0; i < meta.num_inputs(); ++i) {
    auto input = meta.input_tensor_meta(i);
    ASSERT_TRUE(input.ok());
    EXPECT_EQ(input->scalar_type(), ::executorch::aten::ScalarType::Float);
    ASSERT_EQ(input->sizes().size(), 2u);
    EXPECT_EQ(input->sizes()[0], program.rows);
    EXPECT_EQ(input->sizes()[1], program.cols);
  }
  ASSERT_EQ(meta.num_memory_planned_buffers(), program.arenas.size());
  for (std::size_t i = 0; i < program.arenas.size(); ++i) {
    SCOPED_TRACE("planned buffer " + std::to_string(i));
    auto size = meta.memory_planned_buffer_size(i);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, program.arenas[i].bytes);
    auto device = meta.memory_planned_buffer_device(i);
    ASSERT_TRUE(device.ok());
    EXPECT_EQ(device->type(), program.arenas[i].type);
    EXPECT_EQ(static_cast<int>(device->index()), program.arenas[i].index);
  }
  // One past the end is an error, not a CPU default.
  EXPECT_FALSE(meta.memory_planned_buffer_device(program.arenas.size()).ok());
}

TEST_F(DevicePlannedTest, EachProgramParsesAndItsMethodMetaReportsTheTaggedArena) {
  for (const Expected& program : expected_programs()) {
    SCOPED_TRACE(program.name);
    auto file = ::executorch::extension::FileDataLoader::from(program_path(program.name).c_str());
    ASSERT_TRUE(file.ok()) << program_path(program.name);
    auto loaded = etr::Program::load(&file.get(), etr::Program::Verification::InternalConsistency);
    ASSERT_TRUE(loaded.ok()) << "Program::load: " << static_cast<int>(loaded.error()) << "\n" << captured_log();
    auto meta = loaded->method_meta("forward");
    ASSERT_TRUE(meta.ok());
    expect_meta(*meta, program);
  }
}

TEST_F(DevicePlannedTest, ModuleReportsTheTaggedArenaWithoutLoadingTheMethod) {
  for (const Expected& program : expected_programs()) {
    SCOPED_TRACE(program.name);
    Module module(program_path(program.name));
    ASSERT_EQ(module.load(), Error::Ok) << captured_log();
    auto meta = module.method_meta("forward");
    ASSERT_TRUE(meta.ok());
    expect_meta(*meta, program);
    EXPECT_FALSE(module.is_method_loaded("forward"));
  }
}

// cpu_ops_around_fake: cpu_ops_around with the fake engine (no CUDA), loaded with host memory for
// both arenas, as an embedded runner with its own memory would: Method::init resolves
// et_copy::_h2d_copy.out, et_copy::_d2h_copy.out and aten::add.out, which only ExecuTorch's kernel
// library (executorch::kernels, linked here) registers.
TEST_F(DevicePlannedTest, CpuOperatorsAroundTheDelegateResolveAgainstTheKernelLibrary) {
#if !TRTET_TEST_HAVE_EXECUTORCH_KERNELS
  GTEST_SKIP() << "this ExecuTorch has no CPU kernel library (libexecutorch_kernels_optimized)";
#else
  RecordingFactory factory;
  DirectMethod direct;
  ASSERT_EQ(direct.load_program("cpu_ops_around_fake"), Error::Ok) << captured_log();
  auto method = direct.load_method();
  ASSERT_TRUE(method.ok()) << "load_method: " << static_cast<int>(method.error()) << "\n" << captured_log();
  EXPECT_EQ(captured_log().find("Missing operator"), std::string::npos) << captured_log();
  ASSERT_EQ(factory.requests().size(), 1u);
  EXPECT_EQ(factory.requests()[0].spec, "fake min=1x4 max=64x4096");
#endif
}

// Without a GPU: Module allocates the CUDA-tagged arena through the registered CUDA allocator,
// which cannot serve it: load_method fails with a clear error (no abort) and the process goes on.
TEST_F(DevicePlannedTest, ModuleLoadOfADevicePlannedProgramWithoutAGpuFailsClearly) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: this checks the GPU-less load";
  RecordingFactory factory;
  {
    Module module(program_path("boundary_copies_fake"));
    ASSERT_EQ(module.load(), Error::Ok) << "the program itself loads";
    const Error loaded = module.load_method("forward");
    // ExecuTorch 1.5.1's Module logs the failed arena and returns the allocator's error (the
    // project's allocator: AccessFailed for a missing GPU, as execute reports it).
    EXPECT_EQ(loaded, Error::AccessFailed);
    EXPECT_FALSE(module.is_method_loaded("forward"));
    const std::string log = captured_log();
    EXPECT_NE(log.find("Failed to allocate device memory for buffer 1 (device_type=1, device_index=0)"), std::string::npos)
        << log;
    EXPECT_NE(log.find("arena of 3145728 bytes on cuda:0"), std::string::npos) << "our allocator's reason\n" << log;
  }
  // The process stays usable: a host-planned program loads next.
  Module twin(program_path("fake"));
  EXPECT_EQ(twin.load_method("forward"), Error::Ok) << captured_log();
}

}  // namespace
}  // namespace trtet_test
