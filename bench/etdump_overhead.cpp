// etdump: what profiling into ExecuTorch's ETDump costs a call (include/torch_tensorrt/executorch/
// Profiling.h, docs/PERFORMANCE.md).
//
//   trtet-etdump [--calls N] [--batches B] [--etdump FILE] [--program NAME] [--gpu-every K]
//
// Six Modules of program NAME (default etdump_fast: the elementwise engine without a spin on
// 1 MiB float32 tensors, one kernel per enqueue; etdump_k8 and etdump_k32: 8 and 32 kernels, for
// an enqueue whose host cost is closer to a real engine's; x and y are the caller's device
// tensors, the output stays in the program's CUDA arena):
//  - without a tracer;
//  - a tracer that only counts the delegate's events: what the delegate itself costs (marks,
//    queries, GPU times, metadata); ExecuTorch's own hooks then cost a virtual call each;
//  - ETDumpGen at kProfileMethodOnly: ExecuTorch logs Method::execute alone and the delegate times
//    nothing (etdump.method_only: what method-level profiling costs);
//  - ExecuTorch's own events into ETDumpGen, the delegate's counted and dropped: with the counting
//    tracer, it prices ExecuTorch's own logging, which any delegate pays (etdump.floor);
//  - ETDumpGen attached (what an application profiling with ETDump pays, everything logged);
//  - ETDumpGen attached with the load option profiling_gpu_every=K (default 100): every call logs
//    its host event, one call in K its GPU times (etdump.sampled).
// Each call is forward() under a CudaStreamGuard on a stream of the caller's; a batch of N calls is
// timed on the host as a whole (its calls queue and return at once) and the stream is synchronized
// after it, untimed. Batches rotate between the Modules, so drift on the host hits all. After each
// batch the traced Modules' GPU times are flushed, and ETDumpGen's dump taken (untimed), so its
// buffer stays small. Prints the median over batches of the host time per call of each and the
// ratios, etdump.full (ETDumpGen / none, goal <= 1.10) first among them; checks every output and
// that each call of the counting and forwarding tracers logged one host event and one engine GPU
// event.
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

/// An EventTracer that counts the delegate's events (log_profiling_delegate: the only hook it uses)
/// and drops them; ExecuTorch's own events go to `gen` where one is given, nowhere otherwise.
class DelegateCountingTracer final : public etr::EventTracer {
 public:
  explicit DelegateCountingTracer(ETDumpGen* gen = nullptr) : gen_(gen) {}
  void create_event_block(const char* name) override {
    if (gen_ != nullptr) gen_->create_event_block(name);
  }
  etr::EventTracerEntry start_profiling(const char* name, etr::ChainID chain, etr::DebugHandle handle) override {
    if (gen_ == nullptr) return {};
    gen_->set_chain_debug_handle(chain_id_, debug_handle_);  // what Method set on this tracer
    return gen_->start_profiling(name, chain, handle);
  }
  etr::EventTracerEntry start_profiling_delegate(const char* name, etr::DelegateDebugIntId id) override {
    return gen_ != nullptr ? gen_->start_profiling_delegate(name, id) : etr::EventTracerEntry{};
  }
  void end_profiling_delegate(etr::EventTracerEntry entry, const void* metadata, size_t length) override {
    if (gen_ != nullptr) gen_->end_profiling_delegate(entry, metadata, length);
  }
  void log_profiling_delegate(const char* name, etr::DelegateDebugIntId, et_timestamp_t, et_timestamp_t, const void*,
                              size_t) override {
    if (std::strstr(name, " [gpu engine]") != nullptr) ++engine_events;
    if (std::strstr(name, " [gpu ") == nullptr) ++host_events;
  }
  void end_profiling(etr::EventTracerEntry entry) override {
    if (gen_ != nullptr) gen_->end_profiling(entry);
  }
  void track_allocation(etr::AllocatorID id, size_t size) override {
    if (gen_ != nullptr) gen_->track_allocation(id, size);
  }
  etr::AllocatorID track_allocator(const char* name) override {
    return gen_ != nullptr ? gen_->track_allocator(name) : 0;
  }
  etr::Result<bool> log_evalue(const etr::EValue& value, etr::LoggedEValueType type) override {
    return gen_ != nullptr ? gen_->log_evalue(value, type) : etr::Result<bool>(false);
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId,
                                                     const ::executorch::aten::Tensor&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId,
                                                     const etr::ArrayRef<::executorch::aten::Tensor>) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const int&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const bool&) override {
    return false;
  }
  etr::Result<bool> log_intermediate_output_delegate(const char*, etr::DelegateDebugIntId, const double&) override {
    return false;
  }
  void set_delegation_intermediate_output_filter(etr::EventTracerFilterBase*) override {}

  long host_events = 0;
  long engine_events = 0;

 private:
  ETDumpGen* gen_;
};

struct Variant {
  const char* name = "";
  std::unique_ptr<Module> module;
  etr::EventTracer* tracer = nullptr;  ///< owned by module; null: no tracer
  ETDumpGen* gen = nullptr;            ///< the tracer, where it is ETDumpGen
  std::vector<double> us_per_call;
  const void* out = nullptr;
  long calls = 0;
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
  v.calls += calls;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (cudaStreamSynchronize(stream) != cudaSuccess) return -1;  // untimed
  return us / calls;
}

/// Flushes the GPU times (every call was waited for) and, for ETDumpGen, takes the dump (written to
/// `file` if given); false on failure.
bool flush(Variant& v, const std::string& file, std::size_t& dump_bytes) {
  if (v.tracer == nullptr) return true;
  auto pending = ex::flush_profiling(v.tracer);
  if (!pending.ok() || *pending != 0) {
    std::fprintf(stderr, "trtet-etdump: %s: flush_profiling: %s\n", v.name,
                 pending.ok() ? "calls still pending after a synchronize" : pending.status().to_string().c_str());
    return false;
  }
  if (v.gen == nullptr) return true;
  const auto dump = v.gen->get_etdump_data();
  if (dump.buf == nullptr) return false;
  if (!file.empty()) std::ofstream(file, std::ios::binary).write(static_cast<const char*>(dump.buf), dump.size);
  free(dump.buf);
  dump_bytes = dump.size;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 500;
  int batches = 40;
  std::string etdump_file;
  std::string program_name = "etdump_fast";
  int gpu_every = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--gpu-every") == 0) gpu_every = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--program") == 0) program_name = argv[i + 1];
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
  const std::string program = std::string(TRTET_TEST_PROGRAM_DIR) + "/" + program_name + ".pte";
  auto counting = std::make_unique<DelegateCountingTracer>();
  DelegateCountingTracer* counter = counting.get();
  auto method_only = std::make_unique<ETDumpGen>();
  method_only->set_event_tracer_profiling_level(etr::EventTracerProfilingLevel::kProfileMethodOnly);
  ETDumpGen executorch_gen;  // outlives its Module (declared before variants)
  auto forwarding = std::make_unique<DelegateCountingTracer>(&executorch_gen);
  DelegateCountingTracer* forwarder = forwarding.get();
  auto gen = std::make_unique<ETDumpGen>();
  auto sampled_gen = std::make_unique<ETDumpGen>();
  constexpr int kVariants = 6;
  enum { kNone, kCounting, kMethodOnly, kExecuTorchOnly, kETDumpGen, kSampled };
  Variant variants[kVariants];
  variants[kNone].name = "without a tracer";
  variants[kNone].module = std::make_unique<Module>(program);
  variants[kCounting].name = "counting tracer";
  variants[kCounting].tracer = counter;
  variants[kCounting].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(counting));
  variants[kMethodOnly].name = "ETDumpGen, method only";
  variants[kMethodOnly].tracer = variants[kMethodOnly].gen = method_only.get();
  variants[kMethodOnly].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(method_only));
  variants[kExecuTorchOnly].name = "ExecuTorch's events only";
  variants[kExecuTorchOnly].tracer = forwarder;
  variants[kExecuTorchOnly].gen = &executorch_gen;
  variants[kExecuTorchOnly].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(forwarding));
  variants[kETDumpGen].name = "ETDumpGen attached";
  variants[kETDumpGen].tracer = variants[kETDumpGen].gen = gen.get();
  variants[kETDumpGen].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(gen));
  variants[kSampled].name = "ETDumpGen, GPU sampled";
  variants[kSampled].tracer = variants[kSampled].gen = sampled_gen.get();
  variants[kSampled].module = std::make_unique<Module>(program, Module::LoadMode::File, std::move(sampled_gen));
  etr::BackendOptions<1> sampling;
  etr::LoadBackendOptionsMap sampling_map;
  if (sampling.set_option("profiling_gpu_every", gpu_every) != etr::Error::Ok ||
      sampling_map.set_options("TensorRTBackend", sampling.view()) != etr::Error::Ok ||
      variants[kSampled].module->load(sampling_map) != etr::Error::Ok) {
    std::fprintf(stderr, "trtet-etdump: the load option profiling_gpu_every=%d was refused\n", gpu_every);
    return 1;
  }

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
  std::size_t dump_bytes = 0;
  for (Variant& v : variants) {
    if (!flush(v, "", dump_bytes)) return 1;
  }
  for (int b = 0; b < batches; ++b) {
    for (int k = 0; k < kVariants; ++k) {
      Variant& v = variants[(b + k) % kVariants];
      const double us = run_batch(v, stream, calls, inputs);
      if (us < 0) return 1;
      v.us_per_call.push_back(us);
      const bool full = &v == &variants[kETDumpGen];
      std::size_t bytes = 0;
      if (!flush(v, full && b + 1 == batches ? etdump_file : "", bytes)) return 1;
      if (full) dump_bytes = bytes;
    }
  }
  long wrong = 0;
  for (const Variant& v : variants) {
    std::vector<float> out(kCount);
    cudaMemcpy(out.data(), v.out, kBytes, cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < kCount; ++i) wrong += out[i] != 2.0f * x[i] - 0.5f * y[i] ? 1 : 0;
  }
  double t[kVariants];
  for (int k = 0; k < kVariants; ++k) t[k] = median(variants[k].us_per_call);
  const double plain = t[kNone];
  std::printf("%-28s %18s\n", "device I/O, under a guard", "host us per call");
  for (int k = 0; k < kVariants; ++k) std::printf("%-28s %18.3f\n", variants[k].name, t[k]);
  std::printf("delegate events: counting tracer %ld host, %ld engine GPU, for %ld calls; ExecuTorch's events only "
              "%ld host, %ld engine GPU, for %ld calls\n",
              counter->host_events, counter->engine_events, variants[kCounting].calls, forwarder->host_events,
              forwarder->engine_events, variants[kExecuTorchOnly].calls);
  std::printf("ETDump of the last batch: %zu bytes for %d calls%s%s\n", dump_bytes, calls,
              etdump_file.empty() ? "" : ", written to ", etdump_file.c_str());
  const bool logged = counter->host_events == variants[kCounting].calls &&
                      counter->engine_events == variants[kCounting].calls &&
                      forwarder->host_events == variants[kExecuTorchOnly].calls &&
                      forwarder->engine_events == variants[kExecuTorchOnly].calls;
  const double ratio = t[kETDumpGen] / plain;
  std::printf("etdump.full host time per call with ETDumpGen attached / without: %.3f us / %.3f us = %.3f (goal <= 1.10: %s); "
              "program %s; %d batches of %d calls; %ld wrong outputs; every call logged: %s\n",
              t[kETDumpGen], plain, ratio, ratio <= 1.10 ? "met" : "missed", program_name.c_str(), batches, calls, wrong,
              logged ? "yes" : "NO");
  const double sampled_ratio = t[kSampled] / plain;
  std::printf("etdump.sampled host time per call with ETDumpGen attached, GPU timed every %d calls / without: %.3f us / %.3f us "
              "= %.3f (goal <= 1.10: %s)\n",
              gpu_every, t[kSampled], plain, sampled_ratio, sampled_ratio <= 1.10 ? "met" : "missed");
  std::printf("etdump.counting_tracer host time per call with a counting tracer / without: %.3f us / %.3f us = %.3f (the delegate's "
              "own profiling)\n",
              t[kCounting], plain, t[kCounting] / plain);
  std::printf("etdump.method_only host time per call with ETDumpGen at kProfileMethodOnly / without: %.3f us / %.3f us = %.3f "
              "(Method::execute logged, the delegate silent)\n",
              t[kMethodOnly], plain, t[kMethodOnly] / plain);
  // The parts of etdump.full: ExecuTorch's own logging (any delegate pays it), the delegate's
  // machinery, ETDumpGen taking the delegate's two events.
  const double executorch_us = t[kExecuTorchOnly] - t[kCounting];
  const double machinery_us = t[kCounting] - plain;
  const double delegate_logging_us = t[kETDumpGen] - t[kExecuTorchOnly];
  std::printf("etdump.parts per call (differences of medians: as noisy as two runs): ExecuTorch's own events into "
              "ETDumpGen %+.3f us, the delegate's profiling %+.3f us, ETDumpGen taking the delegate's events %+.3f us\n",
              executorch_us, machinery_us, delegate_logging_us);
  std::printf("etdump.floor (ExecuTorch's own events alone, a delegate costing nothing) (%.3f + %.3f) / %.3f = %.3f\n",
              plain, executorch_us, plain, (plain + executorch_us) / plain);
  cudaStreamDestroy(stream);
  cudaFree(dx);
  cudaFree(dy);
  return wrong == 0 && logged ? 0 : 1;
}
