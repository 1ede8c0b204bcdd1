// The fault loop over what runs without a GPU (label cpu; CI runs it): the delegate's init on a
// blob, and programs of each shape loaded through ExecuTorch (Module, or Program and Method with
// the application's memory), with ExecuTorch's allocators, the test engine factory, the delegate's
// handle and whatever CUDA calls the load makes failing in turn (fault_loop.h). On a machine
// without a GPU the calls fail as they do with no fault ("no usable GPU"); each must fail the same
// way after a faulted load that succeeded.
#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/executor/program.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engines/fault_hook.h"
#include "executorch/executorch_test_support.h"
#include "faults/failing_allocator.h"
#include "faults/fault_loop.h"

namespace trtet_faults {
namespace {

namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using trtet_test::captured_log;
using trtet_test::program_path;

// "fake" (delegate_planned.json) is [8, 64] at most; the device-planning templates [64, 4096].
constexpr int kSmallRows = 8;
constexpr int kSmallCols = 64;
constexpr int kRows = 64;
constexpr int kCols = 4096;

/// A MemoryAllocator over a fixed arena (as an embedded runner gives init) whose allocations are
/// points of the seam.
class FixedFailingAllocator : public etr::MemoryAllocator {
 public:
  FixedFailingAllocator(const char* role, std::vector<std::uint8_t>& arena)
      : MemoryAllocator(static_cast<std::uint32_t>(arena.size()), arena.data()), role_(role) {}
  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (trtet_faults_point(role_, TRTET_FAULT_HOOK) != 0) return nullptr;
    return MemoryAllocator::allocate(size, alignment);
  }

 private:
  const char* role_;
};

/// What each call returned with no fault (recorded by the first run), so a faulted run's completed
/// calls can be compared with it.
struct CallRecord {
  std::optional<std::vector<etr::Error>> clean;
  void check(Outcome& run, const std::vector<etr::Error>& calls) {
    if (!clean) {
      clean = calls;
      return;
    }
    for (std::size_t i = 0; i < calls.size() && i < clean->size(); ++i) {
      if (calls[i] != (*clean)[i]) {
        run.fail("call " + std::to_string(i + 1),
                 "returned " + trtet_test::error_with_log(calls[i]) + " (with no fault: " + etr::to_string((*clean)[i]) + ")");
        return;
      }
    }
  }
};

class FaultLoopCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    trtet_test::ensure_executorch_runtime();
    trtet_test::set_engine_fault_hook(&engine_hook);
    trtet_faults_set_kinds(TRTET_FAULT_DEFAULT_KINDS);
  }
  void TearDown() override {
    trtet_test::set_engine_fault_hook(nullptr);
    trtet_faults_reset();
  }
  static void TearDownTestSuite() { print_table(rows(), "fault loop (CPU): shape x path"); }

  static std::vector<LoopRow>& rows() {
    static std::vector<LoopRow> all;
    return all;
  }

  void loop(const std::string& shape, const std::string& path, const Scenario& scenario) {
    LoopRow row = run_loop(shape, path, scenario, LoopOptions{});
    rows().push_back(row);
    EXPECT_GT(row.points, 0u) << shape << " / " << path << " reached no fallible point";
    EXPECT_EQ(row.tried, row.points) << "every point reached with no fault is tried once";
    for (const std::string& f : row.failures) ADD_FAILURE() << shape << " / " << path << ": " << f;
  }

  trtet_test::RecordingFactory factory_;  // test engines from the blob's spec
};

// The delegate's init and destroy, called as ExecuTorch's Method calls them, with a fixed runtime
// allocator: blob parsing, the engine factory, the handle, the session's start.
TEST_F(FaultLoopCpu, BlobInitAndDestroy) {
  etr::BackendInterface* backend = etr::get_backend_class("TensorRTBackend");
  ASSERT_NE(backend, nullptr);
  const std::vector<std::uint8_t> blob = trtet_test::elementwise_blob("fake min=1x4 max=64x4096");
  loop("blob", "init+destroy", [&] {
    Outcome run;
    std::vector<std::uint8_t> arena(1 << 16);
    FixedFailingAllocator allocator("executorch runtime allocator", arena);
    etr::FreeableBuffer processed(blob.data(), blob.size(), nullptr);
    etr::BackendInitContext context(&allocator, nullptr, "forward", nullptr, etr::Span<const etr::BackendOption>());
    auto handle = backend->init(context, &processed, etr::ArrayRef<etr::CompileSpec>());
    if (!handle.ok()) {
      run.fail("init", trtet_test::error_with_log(handle.error()));
      return run;
    }
    backend->destroy(handle.get());
    return run;
  });
}

// Host-planned: Module with ExecuTorch's method and temp allocators failing in turn.
TEST_F(FaultLoopCpu, HostPlannedThroughModule) {
  if (!trtet_test::have_test_programs()) GTEST_SKIP() << "no test programs (flatc or program.fbs not found)";
  CallRecord record;
  std::vector<float> x, y;
  trtet_test::fill_elementwise_inputs(x, y, std::size_t{kSmallRows} * kSmallCols);
  loop("host-planned", "Module, 3 calls", [&] {
    Outcome run;
    Module module(program_path("fake"), Module::LoadMode::File, nullptr, method_allocator(), temp_allocator());
    const etr::Error loaded = module.load_method("forward");
    if (loaded != etr::Error::Ok) {
      run.fail("load", trtet_test::error_with_log(loaded));
      return run;
    }
    std::vector<etr::Error> calls;
    for (int call = 0; call < 3; ++call) {
      auto tx = from_blob(x.data(), {kSmallRows, kSmallCols});
      auto ty = from_blob(y.data(), {kSmallRows, kSmallCols});
      auto out = module.forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
      calls.push_back(out.ok() ? etr::Error::Ok : out.error());
    }
    record.check(run, calls);
    return run;
  });
}

/// Program and Method with the application's memory: planned buffers on the host (CUDA-tagged
/// arenas too: a GPU-less load), ExecuTorch's method and temp allocators failing in turn.
Outcome direct_run(const std::string& name, int rows, int cols, CallRecord& record, const std::vector<float>& x,
               const std::vector<float>& y) {
  Outcome run;
  auto file = ::executorch::extension::FileDataLoader::from(program_path(name).c_str());
  if (!file.ok()) {
    run.fail("open", trtet_test::error_with_log(file.error()));
    return run;
  }
  auto loader = std::make_unique<::executorch::extension::FileDataLoader>(std::move(file.get()));
  auto program = etr::Program::load(loader.get(), etr::Program::Verification::InternalConsistency);
  if (!program.ok()) {
    run.fail("program", trtet_test::error_with_log(program.error()));
    return run;
  }
  auto meta = program->method_meta("forward");
  if (!meta.ok()) {
    run.fail("meta", trtet_test::error_with_log(meta.error()));
    return run;
  }
  std::vector<std::vector<std::uint8_t>> planned;
  std::vector<etr::Span<std::uint8_t>> spans;
  for (std::size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    planned.emplace_back(static_cast<std::size_t>(meta->memory_planned_buffer_size(i).get()));
  }
  for (auto& buffer : planned) spans.emplace_back(buffer.data(), buffer.size());
  FailingAllocator method_memory("executorch method allocator");
  FailingAllocator temp_memory("executorch temp allocator");
  etr::HierarchicalAllocator planned_memory(etr::Span<etr::Span<std::uint8_t>>(spans.data(), spans.size()));
  etr::MemoryManager memory(&method_memory, &planned_memory, &temp_memory);
  auto method = program->load_method("forward", &memory);
  if (!method.ok()) {
    run.fail("load", trtet_test::error_with_log(method.error()));
    return run;
  }
  std::vector<etr::Error> calls;
  for (int call = 0; call < 3; ++call) {
    auto tx = from_blob(const_cast<float*>(x.data()), {rows, cols});
    auto ty = from_blob(const_cast<float*>(y.data()), {rows, cols});
    etr::Error error = method->set_input(etr::EValue(*tx), 0);
    if (error == etr::Error::Ok) error = method->set_input(etr::EValue(*ty), 1);
    if (error == etr::Error::Ok) error = method->execute();
    calls.push_back(error);
  }
  record.check(run, calls);
  return run;
}

TEST_F(FaultLoopCpu, DevicePlannedAndCpuOperatorsThroughMethod) {
  if (!trtet_test::have_test_programs()) GTEST_SKIP() << "no test programs (flatc or program.fbs not found)";
#if !TRTET_TEST_HAVE_EXECUTORCH_KERNELS
  GTEST_SKIP() << "this ExecuTorch has no CPU kernel library: the programs' et_copy and aten operators do not load";
#else
  std::vector<float> x, y;
  trtet_test::fill_elementwise_inputs(x, y, std::size_t{kRows} * kCols);
  for (const char* name : {"fake", "boundary_copies_fake", "cpu_ops_around_fake"}) {
    CallRecord record;
    const std::string shape = std::string(name) == "fake" ? "host-planned" :
                              std::string(name) == "boundary_copies_fake" ? "device-planned" : "cpu-ops-around";
    const bool small = std::string(name) == "fake";
    const int rows = small ? kSmallRows : kRows;
    const int cols = small ? kSmallCols : kCols;
    loop(shape, "Method, 3 calls", [&] { return direct_run(name, rows, cols, record, x, y); });
  }
#endif
}

std::string reached_text() {
  std::string text(trtet_faults_names(nullptr, 0) + 1, '\0');
  trtet_faults_names(text.data(), text.size());
  return text.c_str();
}

TEST(FailingAllocator, AFailingAllocatorReturnsNullForTheArmedAllocation) {
  trtet_faults_reset();
  FailingAllocator allocator("executorch method allocator");
  trtet_faults_arm(2, 0);
  EXPECT_NE(allocator.allocate(64), nullptr);
  EXPECT_EQ(allocator.allocate(64), nullptr);
  EXPECT_NE(allocator.allocate(64), nullptr);
  EXPECT_EQ(reached_text(), "executorch method allocator\nexecutorch method allocator\nexecutorch method allocator\n");
  trtet_faults_reset();
}

// The loop's own checks fail where they should (planted in synthetic scenarios of hook points): an
// error that does not name the failure, a completed step that was wrong, a fault that leaves the
// next fault-free run failing. Each is found at the N it was planted at, and only there.
TEST(FaultLoopChecks, CatchWhatTheyCheck) {
  trtet_faults_set_kinds(TRTET_FAULT_DEFAULT_KINDS);
  auto steps = [](const char* message, bool* broken) {
    Outcome run;
    for (const char* point : {"step one", "step two", "step three"}) {
      if (broken != nullptr && *broken) {
        run.fail("recovery", "still broken");
        return run;
      }
      if (trtet_faults_point(point, TRTET_FAULT_HOOK) != 0) {
        if (std::string(point) == "step two" && broken != nullptr) *broken = true;
        run.fail(point, message);
        return run;
      }
    }
    return run;
  };
  const LoopRow named = run_loop("synthetic", "named", [&] { return steps("step one... : injected fault", nullptr); },
                                 LoopOptions{});
  EXPECT_EQ(named.points, 3u);
  EXPECT_EQ(named.survived, 3u);
  EXPECT_TRUE(named.failures.empty());

  const LoopRow unnamed = run_loop("synthetic", "unnamed", [&] { return steps("something went wrong", nullptr); },
                                   LoopOptions{});
  EXPECT_EQ(unnamed.survived, 0u);
  ASSERT_EQ(unnamed.failures.size(), 3u);
  EXPECT_NE(unnamed.failures[0].find("without naming the failure"), std::string::npos) << unnamed.failures[0];

  bool broken = false;
  const LoopRow sticky = run_loop("synthetic", "sticky", [&] { return steps("injected fault", &broken); },
                                  LoopOptions{});
  EXPECT_EQ(sticky.survived, 1u) << "N=1 survives; N=2 breaks the next run";
  ASSERT_FALSE(sticky.failures.empty());
  EXPECT_EQ(sticky.failures[0].rfind("N=2 step two: the next fault-free run failed", 0), 0u) << sticky.failures[0];

  int call = 0;
  const LoopRow wrong = run_loop("synthetic", "wrong", [&] {
    Outcome run = steps("injected fault", nullptr);
    if (trtet_faults_fired() && ++call == 1) run.wrong.push_back("call 1: output element 0 wrong");
    return run;
  }, LoopOptions{});
  ASSERT_EQ(wrong.failures.size(), 1u);
  EXPECT_NE(wrong.failures[0].find("a completed step was wrong"), std::string::npos) << wrong.failures[0];
  trtet_faults_reset();
}

}  // namespace
}  // namespace trtet_faults
