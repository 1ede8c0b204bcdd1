// P11: what profiling into ExecuTorch's ETDump costs a call (include/torch_tensorrt/executorch/
// Profiling.h, docs/PERFORMANCE.md).
//
//   trtet-etdump [--calls N] [--batches B] [--etdump FILE]
//
// Two Modules of program etdump_fast (the elementwise engine without a spin on 1 MiB float32
// tensors; x and y are the caller's device tensors, the output stays in the program's CUDA arena):
// one with ETDumpGen attached, one without. Each call is forward() under a CudaStreamGuard on a
// stream of the caller's; a batch of N calls is timed on the host as a whole (its calls queue and
// return at once) and the stream is synchronized after it, untimed. Batches alternate between the
// Modules, so drift on the host hits both. Between batches the traced Module's GPU times are
// flushed and its ETDump taken (untimed), so the tracer's buffer stays small. Prints the median over
// batches of the host time per call of each, their ratio (goal <= 1.10), and checks outputs.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;
using ::executorch::etdump::ETDumpGen;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;
constexpr std::size_t kBytes = kCount * sizeof(float);

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Variant {
  const char* name;
  std::unique_ptr<Module> module;
  ETDumpGen* gen = nullptr;  ///< owned by module; null: no tracer
  std::vector<double> us_per_call;
  const void* out = nullptr;
};

/// `calls` forward()s, host time per call in microseconds (or a negative value on failure).
double run_batch(Variant& v, cudaStream_t stream, int calls, std::vector<etr::EValue>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    ex::CudaStreamGuard guard(stream);
    auto outputs = v.module->forward(inputs);
    if (!outputs.ok()) {
      std::fprintf(stderr, "trtet-etdump: %s: forward failed (%d)\n", v.name, static_cast<int>(outputs.error()));
      return -1;
    }
    v.out = outputs->at(0).toTensor().const_data_ptr();
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (cudaStreamSynchronize(stream) != cudaSuccess) return -1;  // untimed
  return us / calls;
}

/// Flushes the GPU times (every call was waited for) and takes the ETDump; its size, 0 on failure.
std::size_t take_dump(Variant& v, const std::string& file) {
  auto pending = ex::flush_profiling(v.gen);
  if (!pending.ok() || *pending != 0) {
    std::fprintf(stderr, "trtet-etdump: flush_profiling: %s\n",
                 pending.ok() ? "calls still pending after a synchronize" : pending.status().to_string().c_str());
    return 0;
  }
  const auto dump = v.gen->get_etdump_data();
  if (dump.buf == nullptr) return 0;
  if (!file.empty()) std::ofstream(file, std::ios::binary).write(static_cast<const char*>(dump.buf), dump.size);
  free(dump.buf);
  return dump.size;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 500;
  int batches = 40;
  std::string etdump_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--etdump") == 0) etdump_file = argv[i + 1];
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-etdump: no GPU\n");
    return 2;
  }
  etr::runtime_init();
  ex::ScopedEngineFactory factory([](const ex::EngineRequest& request) {
    return trtet_test::make_test_engine(
        std::string_view(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size), request.device);
  });
  const std::string program = std::string(TRTET_TEST_PROGRAM_DIR) + "/etdump_fast.pte";
  Variant variants[2] = {{"without a tracer", nullptr}, {"with ETDumpGen attached", nullptr}};
  variants[0].module = std::make_unique<Module>(program);
  auto gen = std::make_unique<ETDumpGen>();
  variants[1].gen = gen.get();
  variants[1].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(gen));

  void* dx = nullptr;
  void* dy = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&dx, kBytes) != cudaSuccess || cudaMalloc(&dy, kBytes) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "trtet-etdump: no device memory or stream\n");
    return 1;
  }
  std::vector<float> x(kCount), y(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 97);
    y[i] = 1.0f + static_cast<float>(i % 13);
  }
  cudaMemcpy(dx, x.data(), kBytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), kBytes, cudaMemcpyHostToDevice);
  const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
  auto tx = from_blob(dx, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  auto ty = from_blob(dy, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  std::vector<etr::EValue> inputs{etr::EValue(*tx), etr::EValue(*ty)};

  for (Variant& v : variants) {
    if (v.module->load_method("forward") != etr::Error::Ok || run_batch(v, stream, 200, inputs) < 0) {
      std::fprintf(stderr, "trtet-etdump: %s: %s does not load or run\n", v.name, program.c_str());
      return 1;
    }
  }
  std::size_t dump_bytes = take_dump(variants[1], "");
  for (int b = 0; b < batches; ++b) {
    for (int k = 0; k < 2; ++k) {
      Variant& v = variants[(b + k) % 2];
      const double us = run_batch(v, stream, calls, inputs);
      if (us < 0) return 1;
      v.us_per_call.push_back(us);
    }
    dump_bytes = take_dump(variants[1], b + 1 == batches ? etdump_file : "");
    if (dump_bytes == 0) return 1;
  }
  long wrong = 0;
  for (const Variant& v : variants) {
    std::vector<float> out(kCount);
    cudaMemcpy(out.data(), v.out, kBytes, cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < kCount; ++i) wrong += out[i] != 2.0f * x[i] - 0.5f * y[i] ? 1 : 0;
  }
  const double plain = median(variants[0].us_per_call), traced = median(variants[1].us_per_call);
  std::printf("%-28s %18s\n", "device I/O, under a guard", "host us per call");
  for (const Variant& v : variants) std::printf("%-28s %18.3f\n", v.name, median(v.us_per_call));
  std::printf("ETDump of the last batch: %zu bytes for %d calls%s%s\n", dump_bytes, calls,
              etdump_file.empty() ? "" : ", written to ", etdump_file.c_str());
  const double ratio = traced / plain;
  std::printf("P11 host time per call with ETDumpGen attached / without: %.3f us / %.3f us = %.3f (goal <= 1.10: %s); "
              "%d batches of %d calls; %ld wrong outputs\n",
              traced, plain, ratio, ratio <= 1.10 ? "met" : "missed", batches, calls, wrong);
  cudaStreamDestroy(stream);
  cudaFree(dx);
  cudaFree(dy);
  return wrong == 0 ? 0 : 1;
}
