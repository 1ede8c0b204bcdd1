// host_io_memory: the device memory a program with pageable host I/O takes, step by step, in a fresh
// process: its load, its first call, then the calls after it (docs/PERFORMANCE.md).
//
//   trtet-host-memory [--calls N]     (default 100)
//
// The program is cold_host_1m (x, y, out host-planned float32 [64, 4096], 1 MiB each, pageable),
// through ExecuTorch's Module with the test engines, every call under a CudaStreamGuard on a stream of
// the caller's and its output checked. Device memory is cudaMemGetInfo's free bytes, read after a
// device synchronize (outside the calls): before the load, after it, after the first call and after
// the N calls after it. host_io_memory.later_calls: what the N later calls add beyond the first
// call's (goal: no more than the first call took, and 0 where the staging the first call made is
// reused). It needs only the public API and the test engines, so the same file builds in a baseline
// tree for `scripts/gpu compare`.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;
constexpr double kMiB = 1024.0 * 1024.0;

int fail(const char* what) {
  std::fprintf(stderr, "trtet-host-memory: %s\n", what);
  return 1;
}

/// Device memory in use (total - free), after everything queued has finished.
long long used_bytes() {
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
  return static_cast<long long>(total - free);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 100;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
    else return fail("usage: trtet-host-memory [--calls N]");
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-host-memory: no GPU\n");
    return 2;
  }
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return fail("no CUDA context");
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return fail("no stream");
  etr::runtime_init();
  ex::ScopedEngineFactory factory([](const ex::EngineRequest& request) {
    return trtet_test::make_test_engine(
        std::string_view(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size), request.device);
  });

  std::vector<float> x(kCount), y(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 97);
    y[i] = 1.0f + static_cast<float>(i % 13);
  }
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  std::vector<etr::EValue> inputs{etr::EValue(*tx), etr::EValue(*ty)};
  const std::string path = std::string(TRTET_TEST_PROGRAM_DIR) + "/cold_host_1m.pte";

  const long long before = used_bytes();
  auto module = std::make_unique<Module>(path);
  if (module->load_method("forward") != etr::Error::Ok) return fail(("cannot load " + path).c_str());
  const long long loaded = used_bytes();
  auto call = [&]() {
    ex::CudaStreamGuard guard(stream);
    auto outputs = module->forward(inputs);
    if (!outputs.ok()) return false;
    const float* out = outputs->at(0).toTensor().const_data_ptr<float>();  // host output: written on return
    for (std::size_t i = 0; i < kCount; i += 997) {
      if (out[i] != 2.0f * x[i] - 0.5f * y[i]) return false;
    }
    return true;
  };
  if (!call()) return fail("the first call failed or its output is wrong");
  const long long first = used_bytes();
  for (int i = 0; i < calls; ++i) {
    if (!call()) return fail("a later call failed or its output is wrong");
  }
  const long long later = used_bytes();
  if (before < 0 || loaded < 0 || first < 0 || later < 0) return fail("cudaMemGetInfo failed");
  module.reset();
  const long long destroyed = used_bytes();

  const double load_mib = static_cast<double>(loaded - before) / kMiB;
  const double first_mib = static_cast<double>(first - loaded) / kMiB;
  const double later_mib = static_cast<double>(later - first) / kMiB;
  std::printf("host_io_memory 1 MiB pageable host I/O (x, y, out), device memory in use (cudaMemGetInfo): the load "
              "adds %.2f MiB, the first call %.2f MiB, the %d calls after it %.2f MiB; after the destroy %.2f MiB "
              "above the start\n",
              load_mib, first_mib, calls, later_mib, static_cast<double>(destroyed - before) / kMiB);
  std::printf("host_io_memory.later_calls %d calls after the first add %.2f MiB against the first call's %.2f MiB "
              "(goal <= the first call's: %s; none: %s)\n",
              calls, later_mib, first_mib, later_mib <= first_mib ? "met" : "missed", later == first ? "yes" : "no");
  cudaStreamDestroy(stream);
  return 0;
}
