// boundary_copies: a device-planned program's boundary copies against the delegate's own staging
// (docs/PERFORMANCE.md).
//
//   trtet-boundary [--calls N] [--batches B]
//
// Two programs of the same elementwise engine, through ExecuTorch's Module, 4 MiB float32 CPU
// tensors in (x, y) and out: boundary_copies_4m (CPU in -> et_copy::_h2d_copy.out -> a CUDA-planned
// arena -> the delegate on device tensors -> et_copy::_d2h_copy.out -> CPU out) and
// boundary_twin_host_4m (host-planned x, y, out: the delegate stages them itself). Each call is
// forward() under a CudaStreamGuard on a stream of the caller's; its host time (set_input's copy
// into the planned input included, the same in both) is one sample. Batches of calls alternate
// between the programs, so drift on the host hits both. Prints each program's p50/p99 and the p99
// ratio (goal <= 1.05), and checks every output.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int kSide = 1024;
constexpr std::size_t kCount = std::size_t{kSide} * kSide;

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const std::size_t index = std::min(values.size() - 1, static_cast<std::size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

struct Program {
  const char* name;
  std::unique_ptr<Module> module;
  std::vector<double> samples_us;
  long wrong = 0;
};

bool run_batch(Program& program, cudaStream_t stream, int calls, std::vector<float>& x, std::vector<float>& y,
               int& round, bool keep) {
  for (int c = 0; c < calls; ++c, ++round) {
    x[static_cast<std::size_t>(round) % kCount] = static_cast<float>(round % 251);  // fresh data every call
    auto tx = from_blob(x.data(), {kSide, kSide});
    auto ty = from_blob(y.data(), {kSide, kSide});
    const auto start = std::chrono::steady_clock::now();
    ex::CudaStreamGuard guard(stream);
    auto outputs = program.module->forward(std::vector<etr::EValue>{etr::EValue(*tx), etr::EValue(*ty)});
    const auto end = std::chrono::steady_clock::now();
    if (!outputs.ok()) {
      std::fprintf(stderr, "trtet-boundary: %s: forward failed (%d)\n", program.name, static_cast<int>(outputs.error()));
      return false;
    }
    const float* out = outputs->at(0).toTensor().const_data_ptr<float>();
    const std::size_t probe = static_cast<std::size_t>(round) % kCount;
    for (std::size_t i : {std::size_t{0}, probe, kCount - 1}) {
      if (out[i] != 2.0f * x[i] - 0.5f * y[i]) ++program.wrong;
    }
    if (keep) program.samples_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 25;
  int batches = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::atoi(argv[i + 1]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-boundary: no GPU\n");
    return 2;
  }
  etr::runtime_init();
  ex::ScopedEngineFactory factory([](const ex::EngineRequest& request) {
    return trtet_test::make_test_engine(
        std::string_view(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size), request.device);
  });
  const std::string dir = TRTET_TEST_PROGRAM_DIR;
  Program programs[2] = {{"boundary copies (device-planned)", nullptr, {}, 0},
                         {"host-planned twin (delegate staging)", nullptr, {}, 0}};
  programs[0].module = std::make_unique<Module>(dir + "/boundary_copies_4m.pte");
  programs[1].module = std::make_unique<Module>(dir + "/boundary_twin_host_4m.pte");
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::vector<float> x(kCount), y(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 97);
    y[i] = 1.0f + static_cast<float>(i % 13);
  }
  int round = 0;
  for (Program& program : programs) {
    if (program.module->load_method("forward") != etr::Error::Ok) {
      std::fprintf(stderr, "trtet-boundary: %s does not load\n", program.name);
      return 1;
    }
    if (!run_batch(program, stream, 50, x, y, round, /*keep=*/false)) return 1;  // warm-up
  }
  for (int b = 0; b < batches; ++b) {
    const int first = b % 2;
    if (!run_batch(programs[first], stream, calls, x, y, round, true)) return 1;
    if (!run_batch(programs[1 - first], stream, calls, x, y, round, true)) return 1;
  }
  std::printf("%-40s %10s %10s %8s\n", "4 MiB in (x2) and out, under a guard", "p50 (us)", "p99 (us)", "wrong");
  for (const Program& program : programs) {
    std::printf("%-40s %10.1f %10.1f %8ld\n", program.name, percentile(program.samples_us, 0.5),
                percentile(program.samples_us, 0.99), program.wrong);
  }
  const double ratio = percentile(programs[0].samples_us, 0.99) / percentile(programs[1].samples_us, 0.99);
  const double ratio50 = percentile(programs[0].samples_us, 0.5) / percentile(programs[1].samples_us, 0.5);
  std::printf("boundary_copies.p99 ratio (boundary copies / twin) %.3f (goal <= 1.05: %s); p50 ratio %.3f; %d calls each\n", ratio,
              ratio <= 1.05 ? "met" : "missed", ratio50, calls * batches);
  cudaStreamDestroy(stream);
  return programs[0].wrong + programs[1].wrong == 0 ? 0 : 1;
}
