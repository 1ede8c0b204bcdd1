// Real exhaustion, not injected (label gpu; skips without one; docs/TESTING.md, "Faults"): the test
// takes nearly all of the GPU's free memory with cudaMalloc before a load, and again before a call
// that must grow the session's staging; and it loads with a staging budget far above what device
// and host memory allow. Each time: the step that runs out fails with an error that names memory,
// nothing is leaked (cudaMemGetInfo after a trim, the process's staging counters), what the
// session had keeps working, and once the memory is given back the same load and calls succeed
// with right outputs.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "staging/staging.h"
#include "executorch/executorch_test_support.h"

namespace trtet_faults {
namespace {

namespace etr = ::executorch::runtime;
namespace ex = torch_tensorrt::executorch_backend;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using trtet_test::captured_log;
using trtet_test::program_path;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

/// Whether `message` says that memory ran out (CUDA's or the driver's words, or the backend's).
bool names_memory(const std::string& message) {
  const std::string text = lower(message);
  for (const char* needle : {"out of memory", "memoryallocation", "allocat", "cudaerrormemoryallocation"}) {
    if (text.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::size_t device_free() {
  std::size_t free_bytes = 0, total = 0;
  (void)cudaMemGetInfo(&free_bytes, &total);
  return free_bytes;
}

/// What must be back after destroy: the device's free memory after a trim, the staging's counters.
struct Snapshot {
  std::size_t free = 0;
  ex::staging::StagingReserve staging;

  static Snapshot take() {
    (void)cudaDeviceSynchronize();
    (void)ex::staging::trim_staging_reserve(0);
    Snapshot s;
    if (auto reserve = ex::staging::staging_reserve(0); reserve.ok()) s.staging = *reserve;
    s.free = device_free();
    (void)cudaGetLastError();
    return s;
  }

  /// What differs from `before` ("" when nothing): free memory may sit `slack` lower.
  std::string leaks_since(const Snapshot& before, std::size_t slack) const {
    std::ostringstream out;
    if (free + slack < before.free) out << "device free memory " << before.free << " -> " << free << "; ";
    if (staging.device.used != before.staging.device.used) {
      out << "device staging used " << before.staging.device.used << " -> " << staging.device.used << "; ";
    }
    if (staging.host.used != before.staging.host.used) {
      out << "pinned staging used " << before.staging.host.used << " -> " << staging.host.used << "; ";
    }
    if (staging.device.reserved > before.staging.device.reserved) {
      out << "device staging reserved after a trim " << before.staging.device.reserved << " -> "
          << staging.device.reserved << "; ";
    }
    if (staging.host.reserved > before.staging.host.reserved) {
      out << "pinned staging reserved after a trim " << before.staging.host.reserved << " -> "
          << staging.host.reserved << "; ";
    }
    return out.str();
  }
};

/// The device's memory, taken with cudaMalloc in blocks of 1 GiB down to 64 KiB until less than
/// `leave` bytes (plus the smallest block) are free; given back by release() or destruction.
class Hog {
 public:
  explicit Hog(std::size_t leave) { fill(leave); }
  ~Hog() { release(); }
  Hog(const Hog&) = delete;
  Hog& operator=(const Hog&) = delete;

  void release() {
    for (void* p : blocks_) (void)cudaFree(p);
    blocks_.clear();
    bytes_ = 0;
    (void)cudaGetLastError();
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void fill(std::size_t leave) {
    for (std::size_t block : {std::size_t{1} << 30, 64 * kMiB, 4 * kMiB, kMiB, 256 * std::size_t{1024}, 64 * std::size_t{1024}}) {
      while (device_free() >= leave + block) {
        void* p = nullptr;
        if (cudaMalloc(&p, block) != cudaSuccess) {
          (void)cudaGetLastError();
          break;
        }
        blocks_.push_back(p);
        bytes_ += block;
      }
    }
  }

  std::vector<void*> blocks_;
  std::size_t bytes_ = 0;
};

/// What the hog may leave above its goal: cudaMalloc maps whole 2 MiB pages, and the driver keeps
/// part of the last ones (on the H200 the hog's last allocations were refused with 3.1 MiB free in
/// one run, 5.1 MiB in another). Goal and slack together stay below the 12 MiB of device staging a
/// 1024-row call grows to, so a hog within them still makes that growth fail.
constexpr std::size_t kHogSlack = 6 * kMiB;

/// How much free memory the hog leaves: TRTET_EXHAUSTION_LEAVE_MB (default 2 MiB), far less than
/// a 1024-row call's device staging (3 bindings of 4 MiB).
std::size_t leave_bytes() {
  const char* env = std::getenv("TRTET_EXHAUSTION_LEAVE_MB");
  return (env != nullptr && *env != '\0' ? static_cast<std::size_t>(std::atoll(env)) : 2) * kMiB;
}

/// Device free memory may sit this much lower after destroy and a trim (the driver's own
/// bookkeeping moves by a page or two); TRTET_FAULTS_FREE_SLACK_MB as for the loop (default 4).
std::size_t slack_bytes() {
  const char* env = std::getenv("TRTET_FAULTS_FREE_SLACK_MB");
  return (env != nullptr && *env != '\0' ? static_cast<std::size_t>(std::atoll(env)) : 4) * kMiB;
}

/// A program x, y -> out (host-planned, pageable host I/O: every call stages through the
/// session's device and pinned staging), out = 2x - 0.5y.
struct Program {
  const char* name;
  int cols;
};
// [rows <= 1024, 1024] float32: a 1024-row call stages 3 x 4 MiB (tests/executorch/CMakeLists.txt).
constexpr Program k4m{"boundary_twin_host_4m", 1024};
// [rows <= 64, 4096] float32, its engine's profile up to 65536 x 1048576: a binding of 256 GiB at
// its largest, more than the H200's device memory (141 GiB) and its host's (128 GiB), so a staging
// budget makes staging that cannot exist (this folder's CMakeLists.txt).
constexpr Program kHuge{"faults_budget_huge", 4096};

class ExhaustionGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (trtet_test::under_sanitizer()) GTEST_SKIP() << "exhaustion is not run under compute-sanitizer";
    if (!trtet_test::have_test_programs()) GTEST_FAIL() << "no test programs: flatc or program.fbs was not found";
    trtet_test::ensure_executorch_runtime();
    trtet_test::clear_log();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }

  static std::unique_ptr<Module> make_module(const Program& program) {
    return std::make_unique<Module>(program_path(program.name), Module::LoadMode::File);
  }

  /// Loads "forward", with load option staging_budget_mb when `budget_mb` > 0. "" or the error.
  static std::string load(Module& module, long long budget_mb = 0) {
    trtet_test::clear_log();
    if (budget_mb > 0) {
      etr::BackendOptions<1> options;
      (void)options.set_option("staging_budget_mb", static_cast<int>(budget_mb));
      etr::LoadBackendOptionsMap map;
      (void)map.set_options("TensorRTBackend", options.view());
      const etr::Error loaded = module.load(map);
      if (loaded != etr::Error::Ok) return trtet_test::error_with_log(loaded);
    }
    const etr::Error loaded = module.load_method("forward");
    return loaded == etr::Error::Ok ? "" : trtet_test::error_with_log(loaded);
  }

  /// One call with `rows` rows of pageable host inputs: "" when it succeeded with right outputs,
  /// "wrong: ..." when an output was wrong, else the error.
  static std::string call(const Program& program, Module& module, int rows, int seed) {
    trtet_test::clear_log();
    const std::size_t count = static_cast<std::size_t>(rows) * static_cast<std::size_t>(program.cols);
    std::vector<float> x, y;
    trtet_test::fill_elementwise_inputs(x, y, count, seed);
    auto tx = from_blob(x.data(), {rows, program.cols});
    auto ty = from_blob(y.data(), {rows, program.cols});
    std::vector<etr::EValue> inputs;
    inputs.emplace_back(*tx);
    inputs.emplace_back(*ty);
    auto result = module.forward(inputs);
    if (!result.ok()) return trtet_test::error_with_log(result.error());
    const auto& out = result->at(0).toTensor();
    if (static_cast<std::size_t>(out.numel()) != count) return "wrong: output of " + std::to_string(out.numel()) + " elements";
    const float* data = out.const_data_ptr<float>();
    for (std::size_t i = 0; i < count; ++i) {
      if (data[i] != trtet_test::elementwise_expected(x[i], y[i])) return "wrong: output element " + std::to_string(i);
    }
    return "";
  }

  /// Load, one call of `rows`, destroy, with nothing in the way: twice, so that what a first run
  /// makes once per process (the staging's arena or pool, the copy workers) is there before a
  /// baseline is taken.
  static void warm_up(const Program& program, int rows) {
    for (int i = 0; i < 2; ++i) {
      auto module = make_module(program);
      ASSERT_EQ(load(*module), "");
      ASSERT_EQ(call(program, *module, rows, i), "");
    }
  }

  trtet_test::RecordingFactory factory_;  ///< the test engines build the programs' engines
};

// Before a load: with less than 2 MiB of the device free, the load or its first call (whose staging
// needs 12 MiB) fails naming memory; once the memory is back the same session's call succeeds,
// destroy leaves nothing behind, and a fresh load and call succeed.
TEST_F(ExhaustionGpu, BeforeALoadTheLoadOrItsFirstCallFailsNamingMemoryAndNothingLeaks) {
  ASSERT_NO_FATAL_FAILURE(warm_up(k4m, 1024));
  const Snapshot baseline = Snapshot::take();
  {
    auto module = make_module(k4m);
    std::string failed_at, failure;
    {
      Hog hog(leave_bytes());
      const std::size_t free_now = device_free();
      std::printf("exhaustion: took %zu MiB, %zu KiB left free\n", hog.bytes() / kMiB, free_now / 1024);
      ASSERT_LT(free_now, leave_bytes() + kHogSlack) << "the hog did not take the device's memory";
      const std::string loaded = load(*module);
      if (!loaded.empty()) {
        failed_at = "load";
        failure = loaded;
      } else {
        const std::string called = call(k4m, *module, 1024, 1);
        ASSERT_EQ(called.rfind("wrong", 0), std::string::npos) << called;
        if (!called.empty()) {
          failed_at = "call";
          failure = called;
        }
      }
      std::printf("exhaustion before a load: %s failed: %s\n", failed_at.c_str(), failure.c_str());
      ASSERT_FALSE(failed_at.empty()) << "with " << free_now << " bytes free, the load and a 1024-row call succeeded";
      EXPECT_TRUE(names_memory(failure)) << failed_at << " failed without naming memory: " << failure;
    }  // the memory given back
    if (failed_at == "call") {
      // The failed call left the session whole: the same call succeeds now.
      EXPECT_EQ(call(k4m, *module, 1024, 2), "");
    } else {
      module = make_module(k4m);  // a failed load leaves the Module unusable; destroy it
    }
  }
  const std::string leaked = Snapshot::take().leaks_since(baseline, slack_bytes());
  EXPECT_EQ(leaked, "") << "after destroy and a trim";
  auto module = make_module(k4m);
  ASSERT_EQ(load(*module), "");
  EXPECT_EQ(call(k4m, *module, 1024, 3), "");
}

// Before a staging growth: a session that staged 1-row calls is called with 1024 rows while less
// than 2 MiB is free: that call fails naming memory, a 1-row call still succeeds, and once the
// memory is back the 1024-row call succeeds; destroy leaves nothing behind.
TEST_F(ExhaustionGpu, BeforeAStagingGrowthTheGrowingCallFailsNamingMemoryAndTheSessionStaysWhole) {
  ASSERT_NO_FATAL_FAILURE(warm_up(k4m, 1024));
  const Snapshot baseline = Snapshot::take();
  {
    auto module = make_module(k4m);
    ASSERT_EQ(load(*module), "");
    ASSERT_EQ(call(k4m, *module, 1, 1), "");
    const Snapshot small = Snapshot::take();  // what 1-row staging holds
    {
      Hog hog(leave_bytes());
      const std::size_t free_now = device_free();
      std::printf("exhaustion: took %zu MiB, %zu KiB left free; staging reserves %llu device, %llu pinned bytes\n",
                  hog.bytes() / kMiB, free_now / 1024, static_cast<unsigned long long>(small.staging.device.reserved),
                  static_cast<unsigned long long>(small.staging.host.reserved));
      ASSERT_LT(free_now, leave_bytes() + kHogSlack) << "the hog did not take the device's memory";
      const std::string grown = call(k4m, *module, 1024, 2);
      std::printf("exhaustion before a staging growth: the 1024-row call: %s\n", grown.empty() ? "succeeded" : grown.c_str());
      ASSERT_FALSE(grown.empty()) << "with " << free_now << " bytes free a 1024-row call succeeded, its staging "
                                  << "(12 MiB device) from memory the staging held already: device reserved "
                                  << small.staging.device.reserved << " bytes before it";
      ASSERT_EQ(grown.rfind("wrong", 0), std::string::npos) << grown;
      EXPECT_TRUE(names_memory(grown)) << "the growing call failed without naming memory: " << grown;
      // Still whole under exhaustion: a call the staging it has fits.
      EXPECT_EQ(call(k4m, *module, 1, 3), "");
    }
    EXPECT_EQ(call(k4m, *module, 1024, 4), "");
    EXPECT_EQ(call(k4m, *module, 1, 5), "");
  }
  EXPECT_EQ(Snapshot::take().leaks_since(baseline, slack_bytes()), "") << "after destroy and a trim";
  auto module = make_module(k4m);
  ASSERT_EQ(load(*module), "");
  EXPECT_EQ(call(k4m, *module, 1024, 6), "");
}

constexpr long long kBudgetMb = 4LL << 20;  // 4 TiB of staging budget

// A staging budget above what memory allows: the budget is a ceiling (Note [staging budget] in
// src/staging/store.cpp: each binding takes twice its largest size while the total fits),
// so the load makes the largest staging the engine's profile allows, 256 GiB a binding here, which
// no device has: the load is refused naming memory, nothing is left behind, and the same program
// loaded without the budget works (its staging grows to the calls' sizes).
TEST_F(ExhaustionGpu, AStagingBudgetAboveMemoryIsRefusedAtLoadAndTheNextLoadWorks) {
  ASSERT_NO_FATAL_FAILURE(warm_up(kHuge, 64));
  const Snapshot baseline = Snapshot::take();
  {
    auto module = make_module(kHuge);
    const std::string loaded = load(*module, kBudgetMb);
    std::printf("staging budget of %lld MiB: load: %s\n", kBudgetMb, loaded.empty() ? "succeeded" : loaded.c_str());
    ASSERT_FALSE(loaded.empty()) << "a budget asking for 256 GiB of staging a binding loaded";
    EXPECT_TRUE(names_memory(loaded)) << loaded;
  }
  EXPECT_EQ(Snapshot::take().leaks_since(baseline, slack_bytes()), "") << "after the refused load";
  auto module = make_module(kHuge);
  ASSERT_EQ(load(*module), "");
  EXPECT_EQ(call(kHuge, *module, 64, 1), "");
}

// The same budget where the largest staging fits (4 MiB bindings): the load makes just that, the
// calls succeed, and destroy gives it back.
TEST_F(ExhaustionGpu, AStagingBudgetAboveMemoryMakesOnlyWhatTheBindingsNeed) {
  ASSERT_NO_FATAL_FAILURE(warm_up(k4m, 1024));
  const Snapshot baseline = Snapshot::take();
  {
    auto module = make_module(k4m);
    ASSERT_EQ(load(*module, kBudgetMb), "");
    const Snapshot loaded = Snapshot::take();
    // x, y and out: 4 MiB each at the largest, device and pinned.
    EXPECT_GE(loaded.staging.device.used, baseline.staging.device.used + 12 * kMiB);
    EXPECT_LE(loaded.staging.device.used, baseline.staging.device.used + 16 * kMiB);
    EXPECT_EQ(call(k4m, *module, 1024, 1), "");
  }
  EXPECT_EQ(Snapshot::take().leaks_since(baseline, slack_bytes()), "") << "after destroy and a trim";
}

}  // namespace
}  // namespace trtet_faults
