// A sticky CUDA error (label gpu; skips without one; docs/TESTING.md, "Faults"; docs/SECURITY.md,
// "Reliability"): an engine kernel writes to an illegal address (the test engines' fault_if key:
// the call whose x[0] is -1 faults). CUDA's rule: such an error is sticky, the context is unusable
// for the rest of the process. What the runtime must still do: report the fault with CUDA's message
// (on the faulting call, or on the next one where the call returned before its work ran), fail every
// later call fast with the same cause, destroy in bounded time, never hang.
//
// Every test here corrupts its process's CUDA context, so each runs in a process of its own: ctest
// runs one test per entry (tests/faults/CMakeLists.txt registers them one by one, no .one_process
// entry), and a watchdog ends the process if a step hangs.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "executorch/executorch_test_support.h"

namespace trtet_faults {
namespace {

namespace etr = ::executorch::runtime;
namespace ex = torch_tensorrt::executorch_backend;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using trtet_test::captured_log;
using trtet_test::program_path;
using Clock = std::chrono::steady_clock;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;
constexpr float kFaultValue = -1.0f;  // the programs' engines: fault_if=-1 (tests/faults/CMakeLists.txt)
constexpr double kFastS = 5.0;        // a call after the fault must fail within this

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

/// Whether `message` carries CUDA's message for the fault (or its name).
bool names_the_fault(const std::string& message) {
  const std::string text = lower(message);
  return text.find(lower(cudaGetErrorString(cudaErrorIllegalAddress))) != std::string::npos ||
         text.find(lower(cudaGetErrorName(cudaErrorIllegalAddress))) != std::string::npos;
}

/// Ends the process (exit 3, naming the step) when a step takes longer than `limit_s`: a hang must
/// fail the test, not wait for ctest's timeout.
class Watchdog {
 public:
  explicit Watchdog(double limit_s) : limit_(limit_s), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void step(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = name;
    since_ = Clock::now();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (!done_ && std::chrono::duration<double>(Clock::now() - since_).count() > limit_) {
        std::fprintf(stderr, "sticky error: step \"%s\" still running after %.0f s: a hang\n", step_.c_str(), limit_);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }

  double limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::string step_ = "start";
  Clock::time_point since_ = Clock::now();
  std::thread thread_;  // last: starts once the rest is made
};

enum class Io { kHost, kDevice };

struct CallResult {
  bool ok = false;
  bool right = false;
  std::string message;
  double seconds = 0;
};

class StickyErrorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (trtet_test::under_sanitizer()) GTEST_SKIP() << "an illegal address is what compute-sanitizer reports itself";
    if (!trtet_test::have_test_programs()) GTEST_FAIL() << "no test programs: flatc or program.fbs was not found";
    trtet_test::ensure_executorch_runtime();
    trtet_test::clear_log();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }

  void TearDown() override {
    // The context is unusable: frees fail with the sticky error; the process ends right after.
    for (void* p : {dx_, dy_}) (void)cudaFree(p);
    (void)cudaGetLastError();
  }

  CallResult call(Module& module, Io io, cudaStream_t stream, bool fault, int seed) {
    trtet_test::clear_log();
    std::vector<float> x, y;
    trtet_test::fill_elementwise_inputs(x, y, kCount, seed);
    if (fault) x[0] = kFaultValue;
    ::executorch::extension::TensorPtr tx, ty;
    if (io == Io::kDevice) {
      // After the fault these copies fail too (the context is gone); the call must still say why.
      (void)cudaMemcpy(dx_, x.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
      (void)cudaMemcpy(dy_, y.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
      (void)cudaGetLastError();
      const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
      tx = from_blob(dx_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
      ty = from_blob(dy_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
    } else {
      tx = from_blob(x.data(), {kRows, kCols});
      ty = from_blob(y.data(), {kRows, kCols});
    }
    std::vector<etr::EValue> inputs;
    inputs.emplace_back(*tx);
    inputs.emplace_back(*ty);
    CallResult r;
    const auto start = Clock::now();
    {
      std::optional<ex::CudaStreamGuard> guard;
      if (stream != nullptr) guard.emplace(stream);
      auto result = module.forward(inputs);
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      r.ok = result.ok();
      if (!result.ok()) {
        r.message = std::string("ExecuTorch error ") + etr::to_string(result.error()) + "; log: " + captured_log();
        return r;
      }
      const auto& out = result->at(0).toTensor();
      std::vector<float> host(kCount);
      if (io == Io::kDevice) {
        (void)cudaStreamSynchronize(stream);
        (void)cudaMemcpy(host.data(), out.const_data_ptr(), kCount * sizeof(float), cudaMemcpyDeviceToHost);
        (void)cudaGetLastError();
      } else {
        std::copy(out.const_data_ptr<float>(), out.const_data_ptr<float>() + kCount, host.begin());
      }
      r.right = true;
      for (std::size_t i = 0; i < kCount && r.right; ++i) {
        r.right = host[i] == trtet_test::elementwise_expected(x[i], y[i]);
      }
    }
    return r;
  }

  /// The whole story on one process: a good call, the faulting call, later calls, destroy, a new load.
  void run(const char* program, Io io, bool guarded, const char* what) {
    Watchdog watchdog(60);
    cudaStream_t stream = nullptr;
    if (guarded) {
      ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    }
    if (io == Io::kDevice) {
      for (void** p : {&dx_, &dy_}) ASSERT_EQ(cudaMalloc(p, kCount * sizeof(float)), cudaSuccess);
    }
    watchdog.step("load");
    auto module = std::make_unique<Module>(program_path(program), Module::LoadMode::File);
    ASSERT_EQ(module->load_method("forward"), etr::Error::Ok) << captured_log();

    watchdog.step("call 1 (no fault)");
    const CallResult first = call(*module, io, stream, /*fault=*/false, 1);
    ASSERT_TRUE(first.ok) << first.message;
    ASSERT_TRUE(first.right) << "the call before the fault gave wrong outputs";

    watchdog.step("call 2 (the faulting kernel)");
    const CallResult faulting = call(*module, io, stream, /*fault=*/true, 2);
    std::string reported_by = faulting.ok ? "" : "call 2";
    std::string cause = faulting.message;
    if (faulting.ok) {
      // It returned before its work ran (nothing synchronized): the stream has the fault now.
      watchdog.step("the caller's synchronization after call 2");
      const cudaError_t synced = stream != nullptr ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize();
      EXPECT_EQ(synced, cudaErrorIllegalAddress) << "the engine's kernel did not fault: " << cudaGetErrorName(synced);
    }

    std::vector<double> later_s;
    for (int i = 3; i <= 5; ++i) {
      watchdog.step("call " + std::to_string(i) + " (after the fault)");
      const CallResult later = call(*module, io, stream, /*fault=*/false, i);
      later_s.push_back(later.seconds);
      EXPECT_FALSE(later.ok) << "call " << i << " after the fault succeeded" << (later.right ? "" : " with wrong outputs");
      EXPECT_LT(later.seconds, kFastS) << "call " << i << " after the fault took " << later.seconds << " s";
      if (!later.ok) {
        EXPECT_TRUE(names_the_fault(later.message)) << "call " << i << " failed without CUDA's message: " << later.message;
        if (reported_by.empty()) {
          reported_by = "call " + std::to_string(i);
          cause = later.message;
        }
      }
    }
    EXPECT_FALSE(reported_by.empty()) << "no call reported the fault";
    EXPECT_TRUE(names_the_fault(cause)) << reported_by << " reported the fault without CUDA's message: " << cause;

    watchdog.step("destroy");
    const auto destroy_start = Clock::now();
    module.reset();
    const double destroy_s = std::chrono::duration<double>(Clock::now() - destroy_start).count();

    watchdog.step("a new load after the fault");
    auto again = std::make_unique<Module>(program_path(program), Module::LoadMode::File);
    trtet_test::clear_log();
    const etr::Error reloaded = again->load_method("forward");
    std::string reload = reloaded == etr::Error::Ok ? "loaded" : "refused";
    if (reloaded != etr::Error::Ok) {
      EXPECT_TRUE(names_the_fault(captured_log())) << "the new load failed without CUDA's message: " << captured_log();
    } else {
      watchdog.step("a call of the new load");
      const CallResult fresh = call(*again, io, stream, /*fault=*/false, 6);
      EXPECT_FALSE(fresh.ok) << "a call succeeded in the faulted context";
      if (!fresh.ok) {
        EXPECT_TRUE(names_the_fault(fresh.message)) << fresh.message;
      }
      reload += fresh.ok ? ", its call succeeded" : ", its call failed naming the fault";
    }
    watchdog.step("destroy of the new load");
    again.reset();
    // The premise: the context stays unusable (CUDA's rule for sticky errors).
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
    std::printf("sticky error (%s): the fault reported by %s: %s\n", what, reported_by.c_str(), cause.c_str());
    std::printf("sticky error (%s): calls after it failed in %.3f / %.3f / %.3f s; destroy %.3f s; a new load: %s\n",
                what, later_s[0], later_s[1], later_s[2], destroy_s, reload.c_str());
    std::fflush(stdout);
  }

  void* dx_ = nullptr;
  void* dy_ = nullptr;
  trtet_test::RecordingFactory factory_;  ///< the test engines build the programs' engines
};

// Pageable host I/O, no guard: the call copies the output back to the caller's memory, so it waits
// for the engine's kernels and sees the fault itself.
TEST_F(StickyErrorGpu, HostIoUnguarded) { run("faults_sticky_host", Io::kHost, false, "host I/O, no guard"); }
// Pageable host I/O under a CudaStreamGuard: the same wait on the caller's stream.
TEST_F(StickyErrorGpu, HostIoGuarded) { run("faults_sticky_host", Io::kHost, true, "host I/O, guard"); }
// Device I/O under a guard: the call returns with the engine's work queued (it does not
// synchronize); the fault shows on the caller's stream, and the next call reports it.
TEST_F(StickyErrorGpu, DeviceIoGuarded) { run("faults_sticky_device", Io::kDevice, true, "device I/O, guard"); }

}  // namespace
}  // namespace trtet_faults
