// The fault loop on a GPU (label gpu; skips without one): every program shape and path the tests
// have (host-planned; device-planned with boundary copies; skipped copies with device I/O; CPU
// operators around the delegate) x (host I/O, device I/O, a guard on a green stream, the delegate's
// graphs, a caller's capture, staging growth, load and destroy), each a load through Module with
// ExecuTorch's allocators of the seam, three calls and destroy, with the 1st, 2nd, ... fallible
// point failing (fault_loop.h). Each test prints its row; the suite's table comes last.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "engines/fault_hook.h"
#include "engines/kernels.h"
#include "executorch/executorch_test_support.h"
#include "faults/failing_allocator.h"
#include "faults/fault_loop.h"
#include "green/split.h"

namespace trtet_faults {
namespace {

namespace etr = ::executorch::runtime;
namespace ex = torch_tensorrt::executorch_backend;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using trtet_test::captured_log;
using trtet_test::program_path;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kMaxCount = std::size_t{kRows} * kCols;

enum class Io { kHost, kDevice };
enum class Stream { kNone, kOwn, kGreen, kNewPartition };

/// One row of the table: a program, how its inputs come and on which stream it is called.
struct Case {
  std::string program;
  std::string shape;
  std::string path;
  Io io = Io::kHost;
  Stream stream = Stream::kNone;
  bool graphs = false;           ///< load option use_cuda_graphs
  bool capture = false;          ///< each call captured by the caller into a graph, then replayed
  bool cpu_ops = false;          ///< result = 4x + 0.5y (cpu_ops_around)
  std::vector<int> rows{kRows, kRows, kRows};  ///< one call per entry, of that many rows
};

float expected(const Case& c, float x, float y) {
  return c.cpu_ops ? trtet_test::elementwise_expected(x + x, y) + y : trtet_test::elementwise_expected(x, y);
}

long first_wrong(const Case& c, const float* out, const std::vector<float>& x, const std::vector<float>& y,
                 std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] != expected(c, x[i], y[i])) return static_cast<long>(i);
  }
  return -1;
}

class FaultLoopGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    if (!trtet_test::have_test_programs()) GTEST_FAIL() << "no test programs: flatc or program.fbs was not found";
    trtet_test::ensure_executorch_runtime();
    trtet_test::clear_log();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    trtet_test::set_engine_fault_hook(&engine_hook);
    // TRTET_FAULTS_KINDS: a mask of faults.h's kinds (e.g. 0x17f: all but thread starts).
    const char* kinds = std::getenv("TRTET_FAULTS_KINDS");
    const unsigned default_kinds = TRTET_FAULT_DEFAULT_KINDS;
    trtet_faults_set_kinds(kinds != nullptr && *kinds != '\0' ? static_cast<unsigned>(std::strtoul(kinds, nullptr, 0))
                                                              : default_kinds);
    Quiet quiet;
    ASSERT_EQ(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking), cudaSuccess);
    for (void** p : {&dx_, &dy_}) ASSERT_EQ(cudaMalloc(p, kMaxCount * sizeof(float)), cudaSuccess);
  }

  void TearDown() override {
    trtet_test::set_engine_fault_hook(nullptr);
    trtet_faults_reset();
    Quiet quiet;
    (void)cudaDeviceSynchronize();
    for (void* p : {dx_, dy_}) (void)cudaFree(p);
    if (own_ != nullptr) (void)cudaStreamDestroy(own_);
    if (green_ != nullptr && !partitions_.empty()) (void)partitions_[0].context.destroy_stream(green_);
    partitions_.clear();
  }

  static void TearDownTestSuite() { print_table(rows(), "fault loop (GPU): shape x path"); }
  static std::vector<LoopRow>& rows() {
    static std::vector<LoopRow> all;
    return all;
  }

  void make_green_stream() {
    Quiet quiet;
    auto partitions = ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true));
    ASSERT_TRUE(partitions.ok()) << partitions.status().to_string();
    partitions_ = std::move(partitions).value();
    auto stream = partitions_[0].context.make_stream();
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    green_ = *stream;
  }

  cudaStream_t stream_of(const Case& c) const {
    switch (c.stream) {
      case Stream::kOwn: return own_;
      case Stream::kGreen: return green_;
      case Stream::kNone:
      case Stream::kNewPartition: break;
    }
    return nullptr;
  }

  /// One call of `c` with `rows` rows of fresh inputs (`call` shifts them); outputs checked.
  void call(const Case& c, Module& module, int index, int rows, Outcome& run) {
    const std::string step = "call " + std::to_string(index + 1);
    std::vector<float> x, y;
    const std::size_t count = static_cast<std::size_t>(rows) * kCols;
    trtet_test::fill_elementwise_inputs(x, y, count, index + 1);
    std::vector<etr::EValue> inputs;
    ::executorch::extension::TensorPtr tx, ty;
    if (c.io == Io::kDevice) {
      Quiet quiet;
      (void)cudaMemcpy(dx_, x.data(), count * sizeof(float), cudaMemcpyHostToDevice);
      (void)cudaMemcpy(dy_, y.data(), count * sizeof(float), cudaMemcpyHostToDevice);
      (void)cudaDeviceSynchronize();
      const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
      tx = from_blob(dx_, {rows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
      ty = from_blob(dy_, {rows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
    } else {
      tx = from_blob(x.data(), {rows, kCols});
      ty = from_blob(y.data(), {rows, kCols});
    }
    inputs.emplace_back(*tx);
    inputs.emplace_back(*ty);
    const cudaStream_t stream = stream_of(c);
    std::optional<ex::CudaStreamGuard> guard;
    if (stream != nullptr) guard.emplace(stream);
    cudaGraph_t graph = nullptr;
    if (c.capture) {
      Quiet quiet;
      if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        run.wrong.push_back(step + ": the test's own cudaStreamBeginCapture failed");
        return;
      }
    }
    auto result = module.forward(inputs);
    if (c.capture) {
      Quiet quiet;
      const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
      (void)cudaGetLastError();
      if (result.ok() && ended != cudaSuccess) {
        run.fail(step, std::string("the capture the call took part in ended with ") + cudaGetErrorString(ended));
        return;
      }
    }
    if (!result.ok()) {
      if (graph != nullptr) {
        Quiet quiet;
        (void)cudaGraphDestroy(graph);
      }
      run.fail(step, trtet_test::error_with_log(result.error()));
      return;
    }
    const etr::etensor::Tensor& out = result->at(0).toTensor();
    std::vector<float> host(count);
    {
      Quiet quiet;
      if (c.capture) {
        cudaGraphExec_t exec = nullptr;
        if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess || cudaGraphLaunch(exec, stream) != cudaSuccess) {
          run.wrong.push_back(step + ": the caller's graph did not instantiate or launch");
        }
        (void)cudaStreamSynchronize(stream);
        if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
        (void)cudaGraphDestroy(graph);
      }
      if (c.io == Io::kDevice) {
        (void)cudaStreamSynchronize(stream);
        (void)cudaMemcpy(host.data(), out.const_data_ptr(), count * sizeof(float), cudaMemcpyDeviceToHost);
      } else {
        // Host outputs are written when the call returns (no synchronization first).
        std::memcpy(host.data(), out.const_data_ptr(), count * sizeof(float));
      }
      (void)cudaGetLastError();
    }
    const long wrong = first_wrong(c, host.data(), x, y, count);
    if (wrong >= 0) run.wrong.push_back(step + ": output element " + std::to_string(wrong) + " wrong");
  }

  Outcome scenario(const Case& c) {
    if (c.stream == Stream::kNewPartition) return partition_scenario(c);
    Outcome run;
    auto module = std::make_unique<Module>(program_path(c.program), Module::LoadMode::File, nullptr,
                                           method_allocator(), temp_allocator());
    if (c.graphs) {
      etr::BackendOptions<1> options;
      (void)options.set_option("use_cuda_graphs", true);
      etr::LoadBackendOptionsMap map;
      (void)map.set_options("TensorRTBackend", options.view());
      const etr::Error loaded = module->load(map);
      if (loaded != etr::Error::Ok) {
        run.fail("load", trtet_test::error_with_log(loaded));
        return run;
      }
    }
    const etr::Error loaded = module->load_method("forward");
    if (loaded != etr::Error::Ok) {
      run.fail("load", trtet_test::error_with_log(loaded));
      return run;
    }
    for (std::size_t i = 0; i < c.rows.size() && run.ok; ++i) call(c, *module, static_cast<int>(i), c.rows[i], run);
    module.reset();  // destroy
    return run;
  }

  /// A partition made inside the run (split_device, a stream on it), the program loaded and called
  /// on it, then all of it destroyed: green-context creation among the points.
  Outcome partition_scenario(const Case& c) {
    Outcome run;
    ++splits_;  // a failed split may have made (and destroyed) some of its contexts: counted too
    auto partitions = ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true));
    if (!partitions.ok()) {
      run.fail("split", partitions.status().to_string());
      return run;
    }
    auto stream = (*partitions)[0].context.make_stream();
    if (!stream.ok()) {
      run.fail("stream", stream.status().to_string());
      return run;
    }
    Case on = c;
    on.stream = Stream::kGreen;
    const cudaStream_t saved = green_;
    green_ = *stream;
    {
      auto module = std::make_unique<Module>(program_path(c.program), Module::LoadMode::File, nullptr,
                                             method_allocator(), temp_allocator());
      const etr::Error loaded = module->load_method("forward");
      if (loaded != etr::Error::Ok) {
        run.fail("load", trtet_test::error_with_log(loaded));
      } else {
        for (std::size_t i = 0; i < c.rows.size() && run.ok; ++i) call(on, *module, static_cast<int>(i), c.rows[i], run);
      }
    }
    green_ = saved;
    const ex::Status destroyed = (*partitions)[0].context.destroy_stream(*stream);
    if (run.ok && !destroyed.ok()) run.fail("destroy stream", destroyed.to_string());
    return run;
  }

  void loop(const Case& c) {
    // Thousands of loads and calls per case: under compute-sanitizer (scripts/gpu sanitize) they would
    // outrun its per-binary limit; the seam's calls are the same either way.
    if (trtet_test::under_sanitizer()) GTEST_SKIP() << "the fault loop is skipped under compute-sanitizer";
    if (c.stream == Stream::kGreen || c.stream == Stream::kNewPartition) TRTET_SKIP_IF_GREEN_UNSUPPORTED();
    if (c.stream == Stream::kGreen) {
      ASSERT_NO_FATAL_FAILURE(make_green_stream());
    }
    LoopOptions options;
    options.gpu = true;
    const char* slack = std::getenv("TRTET_FAULTS_FREE_SLACK_MB");
    options.device_free_slack = (slack != nullptr ? std::atoll(slack) : 4) << 20;
    if (c.stream == Stream::kNewPartition) {
      loop_new_partition(c, options);
      return;
    }
    LoopRow row = run_loop(c.shape, c.path, [&] { return scenario(c); }, options);
    rows().push_back(row);
    std::vector<LoopRow> one{row};
    print_table(one, "fault loop (GPU): this case");
    EXPECT_GT(row.points, 0u);
    for (const std::string& f : row.failures) ADD_FAILURE() << c.shape << " / " << c.path << ": " << f;
  }

  // Note [the driver's memory per partition]
  // ------------------------------------------
  // The new-partition case makes a split (16 SMs and the remainder: two green contexts), a stream
  // on one, loads, calls and destroys, in every run. If the CUDA driver itself keeps device memory
  // for each green context made and destroyed (tell with .deps/probe/green_mem.cu, raw CUDA), the
  // device's free memory falls run after run whatever the runtime does. So this case measures that
  // cost first, on the same calls without the runtime: split, a stream on the 16-SM partition, a
  // kernel and a 1 MiB cudaMallocAsync on it, destroy; 4 such cycles to warm up (a driver that
  // caches per context and stabilises has done so after them), then kCalibration cycles measured:
  // D = what free memory fell per cycle (0 if it did not). The loop then checks free memory against
  // one baseline taken after its warm-up, as every case does, allowing D for each split made since
  // (a split that failed counts as one: it may have made a context). The seam's live bytes and the
  // staging counters are checked by run_loop exactly, as in every case. With D = 0 this is the
  // check every other case makes: a leak of the runtime's shows the same; with D > 0 the table says
  // how much the driver kept per split, and a run that loses more than that still fails.
  static constexpr int kCalibration = 8;

  /// One split with a stream, a kernel and a stream-ordered allocation on it, all destroyed.
  static bool raw_partition_cycle() {
    Quiet quiet;
    auto partitions = ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true));
    if (!partitions.ok()) return false;
    auto stream = (*partitions)[0].context.make_stream();
    if (!stream.ok()) return false;
    void* p = nullptr;
    bool ok = trtet_test::launch_spin(0, 1, *stream).ok();
    ok = ok && cudaMallocAsync(&p, 1 << 20, *stream) == cudaSuccess;
    if (p != nullptr) ok = ok && trtet_test::launch_spin(0, 1, *stream).ok() && cudaFreeAsync(p, *stream) == cudaSuccess;
    ok = ok && cudaStreamSynchronize(*stream) == cudaSuccess;
    ok = (*partitions)[0].context.destroy_stream(*stream).ok() && ok;
    (void)cudaGetLastError();
    return ok;
  }

  /// The bytes of device memory the driver keeps per split made and destroyed (Note [the driver's
  /// memory per partition]); -1 when a cycle failed.
  static long long driver_bytes_per_split() {
    for (int i = 0; i < 4; ++i) {
      if (!raw_partition_cycle()) return -1;
    }
    const std::size_t before = snapshot(true).device_free;
    for (int i = 0; i < kCalibration; ++i) {
      if (!raw_partition_cycle()) return -1;
    }
    const std::size_t after = snapshot(true).device_free;
    const long long fell = static_cast<long long>(before) - static_cast<long long>(after);
    return fell > 0 ? (fell + kCalibration - 1) / kCalibration : 0;
  }

  void loop_new_partition(const Case& c, LoopOptions options) {
    const long long per_split = driver_bytes_per_split();
    ASSERT_GE(per_split, 0) << "a raw split, stream, kernel and destroy failed with no fault";
    std::printf("fault loop (GPU): the driver keeps %lld bytes of device memory per split made and destroyed "
                "(%d raw cycles after 4 to warm up)\n",
                per_split, kCalibration);
    const long long slack = options.device_free_slack;
    options.device_free_slack = std::numeric_limits<long long>::max() / 4;  // checked here instead
    std::vector<std::string> fell;
    int runs = 0;
    std::size_t baseline = 0;
    auto checked = [&]() {
      Outcome run = scenario(c);
      ++runs;
      const std::string fired = trtet_faults_fired() != 0 ? trtet_faults_fired_name() : "-";
      const std::size_t free_now = snapshot(true).device_free;
      if (runs == 2) {  // run_loop's two fault-free runs: its baseline is taken now, and so is this one
        baseline = free_now;
        splits_ = 0;
      } else if (runs > 2) {
        const long long allowed = slack + per_split * splits_;
        if (static_cast<long long>(free_now) + allowed < static_cast<long long>(baseline)) {
          fell.push_back("run " + std::to_string(runs) + " (point " + fired + "): device free memory " +
                         std::to_string(baseline) + " -> " + std::to_string(free_now) + ", more than " +
                         std::to_string(per_split) + " bytes the driver keeps x " + std::to_string(splits_) +
                         " splits + " + std::to_string(slack) + " slack");
        }
      }
      return run;
    };
    LoopRow row = run_loop(c.shape, c.path, checked, options);
    for (const std::string& f : fell) row.failures.push_back("after destroy: " + f);
    rows().push_back(row);
    std::vector<LoopRow> one{row};
    print_table(one, "fault loop (GPU): this case");
    EXPECT_GT(row.points, 0u);
    for (const std::string& f : row.failures) ADD_FAILURE() << c.shape << " / " << c.path << ": " << f;
  }

  int splits_ = 0;  ///< splits the new-partition scenario made (or tried) since the baseline
  cudaStream_t own_ = nullptr;
  cudaStream_t green_ = nullptr;
  std::vector<ex::green::Partition> partitions_;
  void* dx_ = nullptr;
  void* dy_ = nullptr;
  trtet_test::RecordingFactory factory_;
};

// host-planned: x, y -> out in the host arena (boundary_twin_host, a 2 ms engine).
TEST_F(FaultLoopGpu, HostPlannedHostIo) { loop({"boundary_twin_host", "host-planned", "host I/O"}); }
TEST_F(FaultLoopGpu, HostPlannedGreenGuard) {
  Case c{"boundary_twin_host", "host-planned", "green guard"};
  c.stream = Stream::kGreen;
  loop(c);
}
TEST_F(FaultLoopGpu, HostPlannedDelegateGraphs) {
  Case c{"boundary_twin_host", "host-planned", "delegate graphs"};
  c.stream = Stream::kOwn;
  c.graphs = true;
  loop(c);
}
TEST_F(FaultLoopGpu, HostPlannedStagingGrowth) {
  Case c{"boundary_twin_host", "host-planned", "staging growth"};
  c.rows = {4, 16, 64};
  loop(c);
}
TEST_F(FaultLoopGpu, HostPlannedLoadAndDestroy) {
  Case c{"boundary_twin_host", "host-planned", "load+destroy"};
  c.rows = {};
  loop(c);
}
// device-planned with et_copy boundary copies (a CUDA-tagged arena from the project's allocator).
TEST_F(FaultLoopGpu, BoundaryCopiesHostIo) { loop({"boundary_copies", "device-planned", "host I/O"}); }
TEST_F(FaultLoopGpu, BoundaryCopiesGreenGuard) {
  Case c{"boundary_copies", "device-planned", "green guard"};
  c.stream = Stream::kGreen;
  loop(c);
}
TEST_F(FaultLoopGpu, BoundaryCopiesStagingGrowth) {
  Case c{"boundary_copies", "device-planned", "staging growth"};
  c.rows = {4, 16, 64};
  loop(c);
}
// skipped copies: the caller's device tensors in, the output in the CUDA arena.
TEST_F(FaultLoopGpu, SkippedCopiesDeviceIo) {
  Case c{"skipped_copies", "skipped-copies", "device I/O"};
  c.io = Io::kDevice;
  c.stream = Stream::kOwn;
  loop(c);
}
TEST_F(FaultLoopGpu, SkippedCopiesCallersCapture) {
  Case c{"skipped_copies", "skipped-copies", "caller's capture"};
  c.io = Io::kDevice;
  c.stream = Stream::kOwn;
  c.capture = true;
  loop(c);
}
TEST_F(FaultLoopGpu, SkippedCopiesDelegateGraphs) {
  Case c{"skipped_copies", "skipped-copies", "delegate graphs"};
  c.io = Io::kDevice;
  c.stream = Stream::kOwn;
  c.graphs = true;
  loop(c);
}
TEST_F(FaultLoopGpu, SkippedCopiesGreenGuard) {
  Case c{"skipped_copies", "skipped-copies", "green guard"};
  c.io = Io::kDevice;
  c.stream = Stream::kGreen;
  loop(c);
}
// A partition made, used and destroyed in every run.
TEST_F(FaultLoopGpu, HostPlannedNewPartition) {
  Case c{"boundary_twin_host", "host-planned", "new partition"};
  c.stream = Stream::kNewPartition;
  loop(c);
}
// CPU operators around the delegate: aten::add before and after, et_copy in between.
TEST_F(FaultLoopGpu, CpuOpsAroundHostIo) {
  Case c{"cpu_ops_around", "cpu-ops-around", "host I/O"};
  c.cpu_ops = true;
  loop(c);
}
TEST_F(FaultLoopGpu, CpuOpsAroundGreenGuard) {
  Case c{"cpu_ops_around", "cpu-ops-around", "green guard"};
  c.cpu_ops = true;
  c.stream = Stream::kGreen;
  loop(c);
}

}  // namespace
}  // namespace trtet_faults
