// The fault loop over the TensorRT adapter (label gpu; skips without one): an engine made by the
// adapter (make_tensorrt_engine) from the test-only TensorRT (tests/tensorrt/fake, loaded by path
// as a real runtime library is), a Session over it, three calls and destroy, with the 1st, 2nd, ...
// fallible point failing (fault_loop.h). The points are the CUDA calls of the adapter, the session
// and the fake itself (its context's events), and the TensorRT calls the fake lets its fault hook
// fail (trtet_fake_set_fault_hook: createInferRuntime, deserializeCudaEngine,
// createExecutionContext, setInputShape, inferShapes, setTensorAddress, enqueueV3), which fail as
// TensorRT's do: a null object or false, the reason logged to the adapter's logger.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "blob/format.h"
#include "session/session.h"
#include "session/tensor_view.h"
#include "fake/fake_stats.h"
#include "faults/fault_loop.h"
#include "tensorrt/tensorrt_factory.h"

namespace trtet_faults {
namespace {

namespace ex = torch_tensorrt::executorch_backend;
using nlohmann::json;

constexpr int kCols = 4096;
constexpr int kMaxRows = 64;
constexpr std::size_t kMaxCount = std::size_t{kMaxRows} * kCols;

int fake_hook(const char* api) { return trtet_faults_point(api, TRTET_FAULT_HOOK); }

/// The test-only TensorRT, open for the whole test (so the adapter's dlopen and dlclose of it do not
/// unload it between runs) with its fault hook set to the seam's points.
class FakeLibrary {
 public:
  FakeLibrary() : handle_(dlopen(TRTET_FAKE_NVINFER, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ != nullptr) {
      set_hook_ = reinterpret_cast<void (*)(TrtetFakeFaultHook)>(dlsym(handle_, "trtet_fake_set_fault_hook"));
    }
    if (set_hook_ != nullptr) set_hook_(&fake_hook);
  }
  ~FakeLibrary() {
    if (set_hook_ != nullptr) set_hook_(nullptr);
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeLibrary(const FakeLibrary&) = delete;
  FakeLibrary& operator=(const FakeLibrary&) = delete;
  bool ok() const { return set_hook_ != nullptr; }

 private:
  void* handle_;
  void (*set_hook_)(TrtetFakeFaultHook) = nullptr;
};

enum class Io { kHost, kDevice };

/// One row of the table: the engine's plan, how its inputs come and on which stream it is called.
struct Case {
  std::string path;
  Io io = Io::kHost;
  bool guard = false;     ///< a CudaStreamGuard on the test's own stream
  int aux_streams = 0;    ///< the engine's auxiliary streams
  bool two_profiles = false;  ///< profile 0: 1..16 rows, profile 1: 17..64 rows
  bool graphs = false;    ///< SessionOptions::use_cuda_graphs
  std::vector<int> rows{kMaxRows, kMaxRows, kMaxRows};
};

/// x: input [-1, 4096]; y: output [-1, 4096] = x + 1 (the fake's "from").
std::vector<std::uint8_t> plan_of(const Case& c) {
  json x = {{"name", "x"}, {"mode", "input"}, {"dtype", "float32"}, {"shape", {-1, kCols}}};
  if (c.two_profiles) {
    x["min"] = {1, kCols};
    x["max"] = {16, kCols};
    x["profiles"] = json::array({{{"min", {17, kCols}}, {"max", {kMaxRows, kCols}}}});
  } else {
    x["min"] = {1, kCols};
    x["max"] = {kMaxRows, kCols};
  }
  json spec = {{"tensors",
                {x, {{"name", "y"}, {"mode", "output"}, {"dtype", "float32"}, {"shape", {-1, kCols}}, {"from", "x"}}}},
               {"profiles", c.two_profiles ? 2 : 1},
               {"aux_streams", c.aux_streams}};
  const std::string text = std::string(TRTET_FAKE_PLAN_MAGIC) + spec.dump();
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

ex::blob::Metadata x_y() {
  ex::blob::Metadata metadata;
  for (auto [name, is_input] : {std::pair<const char*, bool>{"x", true}, {"y", false}}) {
    ex::blob::IoBinding binding;
    binding.name = name;
    binding.is_input = is_input;
    metadata.io_bindings.push_back(binding);
  }
  return metadata;
}

class TensorRTFaultLoopGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_TRUE(fake_.ok()) << "the test-only TensorRT " << TRTET_FAKE_NVINFER << " did not load: " << dlerror();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    const char* kinds = std::getenv("TRTET_FAULTS_KINDS");
    trtet_faults_set_kinds(kinds != nullptr && *kinds != '\0' ? static_cast<unsigned>(std::strtoul(kinds, nullptr, 0))
                                                              : static_cast<unsigned>(TRTET_FAULT_DEFAULT_KINDS));
    Quiet quiet;
    ASSERT_EQ(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking), cudaSuccess);
    for (void** p : {&dx_, &dy_}) ASSERT_EQ(cudaMalloc(p, kMaxCount * sizeof(float)), cudaSuccess);
  }

  void TearDown() override {
    trtet_faults_reset();
    Quiet quiet;
    (void)cudaDeviceSynchronize();
    for (void* p : {dx_, dy_}) (void)cudaFree(p);
    if (own_ != nullptr) (void)cudaStreamDestroy(own_);
  }

  static void TearDownTestSuite() { print_table(rows(), "fault loop (GPU): the TensorRT adapter over the test-only TensorRT"); }
  static std::vector<LoopRow>& rows() {
    static std::vector<LoopRow> all;
    return all;
  }

  /// One call of `rows` rows of fresh inputs; y = x + 1 checked when the contract says it is ready.
  void call(const Case& c, ex::delegate::Session& session, int index, int rows, Outcome& run) {
    const std::string step = "call " + std::to_string(index + 1);
    const std::size_t count = static_cast<std::size_t>(rows) * kCols;
    std::vector<float> x(count), y(count, -7.0f);
    for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<float>((i * 7 + index * 13) % 1000) * 0.5f;
    ex::delegate::TensorView views[2];
    const ex::Shape shape({rows, kCols});
    for (ex::delegate::TensorView& view : views) {
      view.shape = shape;
      view.capacity_bytes = count * sizeof(float);
      view.hint = c.io == Io::kDevice ? ex::delegate::MemoryHint::kDevice : ex::delegate::MemoryHint::kHost;
    }
    if (c.io == Io::kDevice) {
      Quiet quiet;
      (void)cudaMemcpy(dx_, x.data(), count * sizeof(float), cudaMemcpyHostToDevice);
      (void)cudaMemset(dy_, 0xff, count * sizeof(float));
      (void)cudaDeviceSynchronize();
      views[0].data = dx_;
      views[1].data = dy_;
    } else {
      views[0].data = x.data();
      views[1].data = y.data();
    }
    ex::Status status;
    {
      std::optional<ex::CudaStreamGuard> guard;
      if (c.guard) guard.emplace(own_);
      status = session.execute(views, 2);
    }
    if (!status.ok()) {
      run.fail(step, status.to_string());
      return;
    }
    if (c.io == Io::kDevice) {
      Quiet quiet;
      // Device outputs are ready once the caller's stream gets there (or on return, with no guard).
      if (c.guard) (void)cudaStreamSynchronize(own_);
      (void)cudaMemcpy(y.data(), dy_, count * sizeof(float), cudaMemcpyDeviceToHost);
      (void)cudaGetLastError();
    }
    // Host outputs are written when the call returns (no synchronization first).
    for (std::size_t i = 0; i < count; ++i) {
      if (y[i] != x[i] + 1.0f) {
        run.wrong.push_back(step + ": output element " + std::to_string(i) + " is " + std::to_string(y[i]) +
                            ", not " + std::to_string(x[i] + 1.0f));
        return;
      }
    }
  }

  Outcome scenario(const Case& c) {
    Outcome run;
    const std::vector<std::uint8_t> bytes = plan_of(c);
    const ex::blob::Metadata metadata = x_y();
    ex::EngineRequest request;
    request.engine_bytes = bytes.data();
    request.engine_size = bytes.size();
    request.metadata = &metadata;
    request.device = 0;
    request.runtime_library = std::string(TRTET_FAKE_NVINFER);
    auto engine = ex::tensorrt::make_tensorrt_engine(request);
    if (!engine.ok()) {
      run.fail("load", engine.status().to_string());
      return run;
    }
    ex::delegate::SessionOptions options;
    options.use_cuda_graphs = c.graphs;
    auto session = std::make_unique<ex::delegate::Session>(std::move(engine).value(), options);
    const ex::Status initialized = session->initialize();
    if (!initialized.ok()) {
      run.fail("load", initialized.to_string());
      return run;
    }
    for (std::size_t i = 0; i < c.rows.size() && run.ok; ++i) call(c, *session, static_cast<int>(i), c.rows[i], run);
    session.reset();  // destroy
    return run;
  }

  void loop(const Case& c) {
    if (trtet_test::under_sanitizer()) GTEST_SKIP() << "the fault loop is skipped under compute-sanitizer";
    LoopOptions options;
    options.gpu = true;
    const char* slack = std::getenv("TRTET_FAULTS_FREE_SLACK_MB");
    options.device_free_slack = (slack != nullptr ? std::atoll(slack) : 4) << 20;
    LoopRow row = run_loop("TensorRT (test-only)", c.path, [&] { return scenario(c); }, options);
    rows().push_back(row);
    print_table({row}, "fault loop (GPU): this case");
    EXPECT_GT(row.points, 0u);
    // Every TensorRT call the fake can fail was reached, on top of the CUDA calls.
    for (const char* api : {"createInferRuntime", "deserializeCudaEngine", "createExecutionContext", "setInputShape",
                            "setTensorAddress", "enqueueV3"}) {
      EXPECT_EQ(row.calls.count(api), 1u) << c.path << ": the point " << api << " was never reached";
    }
    for (const std::string& f : row.failures) ADD_FAILURE() << c.path << ": " << f;
  }

  FakeLibrary fake_;
  cudaStream_t own_ = nullptr;
  void* dx_ = nullptr;
  void* dy_ = nullptr;
};

TEST_F(TensorRTFaultLoopGpu, HostIo) { loop({"host I/O"}); }

TEST_F(TensorRTFaultLoopGpu, HostIoGuarded) {
  Case c{"host I/O, guard"};
  c.guard = true;
  loop(c);
}

TEST_F(TensorRTFaultLoopGpu, DeviceIoGuarded) {
  Case c{"device I/O, guard"};
  c.io = Io::kDevice;
  c.guard = true;
  loop(c);
}

TEST_F(TensorRTFaultLoopGpu, AuxiliaryStreams) {
  Case c{"2 aux streams, device I/O, guard"};
  c.io = Io::kDevice;
  c.guard = true;
  c.aux_streams = 2;
  loop(c);
}

TEST_F(TensorRTFaultLoopGpu, TwoProfiles) {
  Case c{"2 profiles (8, 64, 8 rows), host I/O"};
  c.two_profiles = true;
  c.rows = {8, kMaxRows, 8};
  loop(c);
}

TEST_F(TensorRTFaultLoopGpu, DelegateGraphs) {
  Case c{"delegate graphs, device I/O, guard"};
  c.io = Io::kDevice;
  c.guard = true;
  c.graphs = true;
  loop(c);
}

}  // namespace
}  // namespace trtet_faults
