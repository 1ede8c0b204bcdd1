// cold_start and staging_reserve: what a load of a new program and its first call cost, step by
// step, and what the process's staging reserves against what the sessions use (docs/PERFORMANCE.md).
//
//   trtet-cold-start [--loads N] [--models M]                runs the three parts below, each in a
//                                                            process of its own, and the table last
//   trtet-cold-start --program host|device [--loads N]       one program's breakdown
//   trtet-cold-start --reserve [--models M]                  the reserve rows, the pools' granularity
//                                                            and the arenas' (below)
//   trtet-cold-start --probe                                 the arenas' part alone
//
// Against another tree (the code before a change, say): `scripts/gpu compare BASE_TREE` runs the
// benchmarks of both trees, alternating, in one run.
//
// Programs (through ExecuTorch's Module, test engines from the installed factory, as trtet-etdump):
//   host    cold_host_1m: x, y, out host-planned float32 [64, 4096] (1 MiB each, pageable), the
//           elementwise engine without a spin; the first call stages them (device staging, pinned
//           host staging, the copy pool).
//   device  etdump_fast: x, y the caller's device tensors, out in the program's CUDA arena.
// Each load, timed on the host: Module's constructor and load() (the program), load_method
// ("forward": ExecuTorch's method init, the delegate's init inside it), then the first forward()
// under a CudaStreamGuard on a stream of the caller's (a call with host outputs returns with them
// written; one with device outputs returns once queued). The delegate's own steps come from a
// LoadTrace set on this thread (common/load_trace.h); "the rest" of a phase is its time less its
// recorded steps. The first load in the process is reported apart from loads 2..N (median), which
// are what a server that swaps models pays. Each load's output is checked, then the Module goes
// (destroy timed apart).
//
// --reserve: first the granularity of CUDA's pools, from fresh pools (one allocation of 1 MiB, then
// 3 MiB, then 40 MiB; and a pool made with a 4 MiB maxSize), then the process's staging pools
// (Note [shared staging pools]) with one host model loaded and called, and with M (16) at once:
// reserved against used, device and pinned host. staging_reserve.one_model: one model reserves at
// most 4 MiB of each; staging_reserve.many_models: M models reserve at most 1.25x what they use.
// Then the staging arenas that serve the process's staging where the device has virtual memory
// management (Note [staging arena]): the driver's granularities, whether host-location cuMemCreate
// works, and fresh arenas' reserve for the same allocations as the pools'. --probe prints that part
// alone.
#include <torch_tensorrt/executorch/CudaStreamGuard.h>
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
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <csetjmp>
#include <csignal>

#include "common/load_trace.h"
#include "cuda/driver.h"
#include "cuda/memory_pool.h"
#include "staging/arena.h"
#include "staging/pool.h"
#include "staging/staging.h"
#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
namespace etr = ::executorch::runtime;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using Clock = std::chrono::steady_clock;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;
constexpr std::size_t kBytes = kCount * sizeof(float);
constexpr double kMiB = 1024.0 * 1024.0;

// Torch-TensorRT's delegate over the same test engines and programs (load + first call, host time),
// measured on the H200 in other runs: the comparison is not of one run.
constexpr double kPeerHostUs = 1700.0;
constexpr double kPeerDeviceUs = 140.0;

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int fail(const char* what) {
  std::fprintf(stderr, "trtet-cold-start: %s\n", what);
  return 1;
}

/// One load and first call: each named part's host time (us).
using Parts = std::map<std::string, double>;

struct Program {
  bool host = true;
  std::string path;
  std::vector<float> x, y;
  void* dx = nullptr;
  void* dy = nullptr;
};

/// The rows of the breakdown, in order, and where each comes from.
const char* const kLoadSteps[] = {"delegate: load options", "delegate: blob parse", "delegate: engine creation",
                                  "delegate: handle", "session: device and its attributes", "session: events",
                                  "session: own stream", "session: staging pools", "session: budgeted staging",
                                  "chunk events"};
const char* const kCallSteps[] = {"device staging growth", "host staging growth", "chunk events", "copy pool"};

/// Loads `program`, makes its first call and checks it; fills `parts`. False on any failure.
bool load_and_call(const Program& program, cudaStream_t stream, Parts& parts) {
  ex::LoadTrace trace;
  std::vector<etr::EValue> inputs;
  auto tx = program.host ? from_blob(const_cast<float*>(program.x.data()), {kRows, kCols})
                         : from_blob(program.dx, {kRows, kCols}, ::executorch::aten::ScalarType::Float,
                                     ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0));
  auto ty = program.host ? from_blob(const_cast<float*>(program.y.data()), {kRows, kCols})
                         : from_blob(program.dy, {kRows, kCols}, ::executorch::aten::ScalarType::Float,
                                     ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0));
  inputs.emplace_back(*tx);
  inputs.emplace_back(*ty);

  ex::set_load_trace(&trace);
  const auto t0 = Clock::now();
  auto module = std::make_unique<Module>(program.path);
  const bool loaded = module->load() == etr::Error::Ok;
  const auto t1 = Clock::now();
  const bool method = loaded && module->load_method("forward") == etr::Error::Ok;
  const auto t2 = Clock::now();
  const std::size_t load_steps = trace.steps().size();
  bool called = false;
  const void* out = nullptr;
  if (method) {
    ex::CudaStreamGuard guard(stream);
    auto outputs = module->forward(inputs);
    called = outputs.ok();
    if (called) out = outputs->at(0).toTensor().const_data_ptr();
  }
  const auto t3 = Clock::now();
  ex::set_load_trace(nullptr);
  if (!called) return false;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return false;

  // The output: out = 2x - 0.5y.
  std::vector<float> result(kCount);
  if (program.host) {
    std::memcpy(result.data(), out, kBytes);
  } else if (cudaMemcpy(result.data(), out, kBytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    return false;
  }
  for (std::size_t i = 0; i < kCount; i += 997) {
    if (result[i] != 2.0f * program.x[i] - 0.5f * program.y[i]) {
      std::fprintf(stderr, "trtet-cold-start: wrong output at %zu\n", i);
      return false;
    }
  }
  const auto t4 = Clock::now();
  module.reset();
  const auto t5 = Clock::now();

  double load_recorded = 0;
  double call_recorded = 0;
  for (std::size_t s = 0; s < trace.steps().size(); ++s) {
    const ex::LoadStep& step = trace.steps()[s];
    const bool in_load = s < load_steps;
    const std::string name = std::string(in_load ? "load: " : "first call: ") + step.name;
    parts[name] += static_cast<double>(step.ns) / 1000.0;
    (in_load ? load_recorded : call_recorded) += static_cast<double>(step.ns) / 1000.0;
  }
  parts["load: ExecuTorch program (Module, load)"] = us_between(t0, t1);
  parts["load: ExecuTorch method init, the rest"] = us_between(t1, t2) - load_recorded;
  parts["first call: the rest (checks, copies, engine, waits)"] = us_between(t2, t3) - call_recorded;
  parts["total: load"] = us_between(t0, t2);
  parts["total: first call"] = us_between(t2, t3);
  parts["total: load + first call"] = us_between(t0, t3);
  parts["destroy (Module)"] = us_between(t4, t5);
  return true;
}

int run_program(const std::string& which, int loads) {
  Program program;
  program.host = which == "host";
  program.path = std::string(TRTET_TEST_PROGRAM_DIR) + "/" + (program.host ? "cold_host_1m" : "etdump_fast") + ".pte";
  program.x.resize(kCount);
  program.y.resize(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    program.x[i] = 0.25f * static_cast<float>(i % 97);
    program.y[i] = 1.0f + static_cast<float>(i % 13);
  }
  const auto context_start = Clock::now();
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return fail("no CUDA context");
  const double context_us = us_between(context_start, Clock::now());
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return fail("no stream");
  if (!program.host) {
    if (cudaMalloc(&program.dx, kBytes) != cudaSuccess || cudaMalloc(&program.dy, kBytes) != cudaSuccess) {
      return fail("no device memory");
    }
    cudaMemcpy(program.dx, program.x.data(), kBytes, cudaMemcpyHostToDevice);
    cudaMemcpy(program.dy, program.y.data(), kBytes, cudaMemcpyHostToDevice);
  }
  std::vector<Parts> runs;
  for (int i = 0; i < loads; ++i) {
    Parts parts;
    if (!load_and_call(program, stream, parts)) return fail(("load " + std::to_string(i) + " of " + program.path + " failed").c_str());
    runs.push_back(std::move(parts));
  }
  // Rows: the totals, then every part seen, in the order of the steps, then any other.
  std::vector<std::string> names = {"total: load + first call", "total: load", "total: first call",
                                    "load: ExecuTorch program (Module, load)", "load: ExecuTorch method init, the rest"};
  for (const char* step : kLoadSteps) names.push_back(std::string("load: ") + step);
  for (const char* step : kCallSteps) names.push_back(std::string("first call: ") + step);
  names.push_back("first call: the rest (checks, copies, engine, waits)");
  names.push_back("destroy (Module)");
  for (const Parts& parts : runs) {
    for (const auto& [name, us] : parts) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::printf("cold_start %s I/O program (%s), %d loads in one process; CUDA context made before, %.1f us (not counted)\n",
              program.host ? "1 MiB pageable host" : "device", program.path.c_str(), loads, context_us);
  std::printf("  %-58s %14s %18s\n", "step (host us)", "first load", "loads 2..N median");
  for (const std::string& name : names) {
    bool seen = false;
    std::vector<double> later;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const auto found = runs[r].find(name);
      if (found != runs[r].end()) seen = true;
      if (r > 0) later.push_back(found != runs[r].end() ? found->second : 0.0);
    }
    if (!seen) continue;
    const auto first = runs[0].find(name);
    std::printf("  %-58s %14.1f %18.1f\n", name.c_str(), first != runs[0].end() ? first->second : 0.0, median(later));
  }
  std::vector<double> later_total;
  for (std::size_t r = 1; r < runs.size(); ++r) later_total.push_back(runs[r]["total: load + first call"]);
  const double first_total = runs[0]["total: load + first call"];
  const double peer = program.host ? kPeerHostUs : kPeerDeviceUs;
  const char* id = program.host ? "cold_start.host_io" : "cold_start.device_io";
  std::printf("%s load + first call, %s I/O: first load %.1f us, loads 2..N median %.1f us; Torch-TensorRT's "
              "(measured in another run) %.0f us: ratio %.3f first, %.3f later (goal <= 1.00: %s)\n",
              id, program.host ? "1 MiB pageable host" : "device", first_total, median(later_total), peer,
              first_total / peer, median(later_total) / peer, median(later_total) <= peer ? "met" : "missed");
  cudaStreamDestroy(stream);
  if (program.dx != nullptr) cudaFree(program.dx);
  if (program.dy != nullptr) cudaFree(program.dy);
  return 0;
}

// ---- the reserve ----------------------------------------------------------------------------

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / kMiB; }

/// What a fresh pool reserves for allocations of `sizes` (MiB) made one after another, printed.
void probe_pool(const char* what, bool host, std::size_t max_size, cudaStream_t stream) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  props.location.id = 0;
  props.maxSize = max_size;
  cudaMemPool_t pool = nullptr;
  if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
    std::printf("  %s: cudaMemPoolCreate refused (%s)\n", what, cudaGetErrorString(cudaGetLastError()));
    return;
  }
  if (host) {
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = 0;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    cudaMemPoolSetAccess(pool, &access, 1);
  }
  std::string line = std::string("  ") + what + ":";
  std::vector<void*> held;
  for (const double size_mib : {1.0, 3.0, 40.0}) {
    if (max_size != 0 && size_mib > 3.0) break;
    void* p = nullptr;
    const auto start = Clock::now();
    const cudaError_t made = cudaMallocFromPoolAsync(&p, static_cast<std::size_t>(size_mib * kMiB), pool, stream);
    cudaStreamSynchronize(stream);
    const double us = us_between(start, Clock::now());
    if (made != cudaSuccess) {
      (void)cudaGetLastError();
      line += " +" + std::to_string(static_cast<int>(size_mib)) + " MiB refused;";
      continue;
    }
    held.push_back(p);
    const auto usage = ex::cuda::pool_usage(pool);
    char part[160];
    std::snprintf(part, sizeof part, " +%.0f MiB -> reserved %.1f MiB, used %.1f MiB (%.0f us);", size_mib,
                  usage.ok() ? mib(usage->reserved) : -1.0, usage.ok() ? mib(usage->used) : -1.0, us);
    line += part;
  }
  for (void* p : held) cudaFreeAsync(p, stream);
  cudaStreamSynchronize(stream);
  cudaMemPoolTrimTo(pool, 0);
  std::printf("%s\n", line.c_str());
  // Never destroyed (Note [shared staging pools] in src/staging/pool.cpp); it holds nothing now.
}

// ---- the arenas (Note [staging arena]) -------------------------------------------------------

sigjmp_buf g_touch_failed;

/// Writes and reads `bytes` at `data` on the host; false where that faults (no host access).
bool host_can_touch(void* data, std::size_t bytes) {
  struct sigaction previous {};
  struct sigaction on_fault {};
  on_fault.sa_handler = [](int) { siglongjmp(g_touch_failed, 1); };
  sigemptyset(&on_fault.sa_mask);
  sigaction(SIGSEGV, &on_fault, &previous);
  sigaction(SIGBUS, &on_fault, nullptr);
  bool ok = false;
  if (sigsetjmp(g_touch_failed, 1) == 0) {
    std::memset(data, 0x5a, bytes);
    ok = static_cast<volatile unsigned char*>(data)[bytes - 1] == 0x5a;
  }
  sigaction(SIGSEGV, &previous, nullptr);
  signal(SIGBUS, SIG_DFL);
  return ok;
}

/// The driver's facts behind the arenas: attributes, granularities, host-location cuMemCreate.
void print_vmm_facts() {
  auto api = ex::cuda::vmm_driver();
  if (!api.ok()) {
    std::printf("  no VMM driver table: %s\n", api.status().to_string().c_str());
    return;
  }
  const ex::cuda::VmmApi& vmm = **api;
  CUdevice device = 0;
  vmm.cuDeviceGet(&device, 0);
  auto attribute = [&](CUdevice_attribute which) {
    int value = -99;
    const CUresult got = vmm.cuDeviceGetAttribute(&value, which, device);
    return got == CUDA_SUCCESS ? value : -99;
  };
  const int numa = attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  std::printf("  attributes (-99: unknown to the driver): VMM %d, host VMM %d, host NUMA VMM %d, host memory pools %d, "
              "host NUMA id %d\n",
              attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
              attribute(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
              attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
              attribute(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED), numa);
  struct Where {
    const char* name;
    CUmemLocationType type;
    int id;
  };
  for (const Where where : {Where{"device", CU_MEM_LOCATION_TYPE_DEVICE, 0}, Where{"host", CU_MEM_LOCATION_TYPE_HOST, 0},
                            Where{"host NUMA", CU_MEM_LOCATION_TYPE_HOST_NUMA, numa < 0 ? 0 : numa}}) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = where.type;
    prop.location.id = where.id;
    std::size_t minimum = 0, recommended = 0;
    const CUresult a = vmm.cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    const CUresult b = vmm.cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    std::string created = "not tried";
    if (a == CUDA_SUCCESS && minimum != 0) {
      CUmemGenericAllocationHandle handle = 0;
      const auto start = Clock::now();
      const CUresult made = vmm.cuMemCreate(&handle, minimum, &prop, 0);
      const double us = us_between(start, Clock::now());
      if (made == CUDA_SUCCESS) {
        vmm.cuMemRelease(handle);
        char text[64];
        std::snprintf(text, sizeof text, "works (%.0f us)", us);
        created = text;
      } else {
        created = std::string("refused: ") + ex::cuda::driver_error_string(made);
      }
    }
    std::printf("  %s memory: granularity minimum %s, recommended %s; cuMemCreate of the minimum %s\n", where.name,
                a == CUDA_SUCCESS ? (std::to_string(minimum >> 10) + " KiB").c_str() : ex::cuda::driver_error_string(a),
                b == CUDA_SUCCESS ? (std::to_string(recommended >> 10) + " KiB").c_str() : ex::cuda::driver_error_string(b),
                created.c_str());
  }
}

/// What a fresh arena reserves for allocations of 1, 3 and 40 MiB made one after another, and
/// (pinned host) whether the host and the device both read and write its memory.
void probe_arena(const char* what, ex::staging::PoolKind kind, cudaStream_t stream) {
  auto made = ex::staging::StagingArena::create(kind, 0);
  if (!made.ok()) {
    std::printf("  %s: none (%s)\n", what, made.status().to_string().c_str());
    return;
  }
  ex::staging::StagingArena& arena = **made;
  std::string line = std::string("  ") + what + ":";
  std::vector<void*> held;
  for (const double size_mib : {1.0, 3.0, 40.0}) {
    const auto start = Clock::now();
    auto data = arena.allocate(static_cast<std::size_t>(size_mib * kMiB), stream);
    const double us = us_between(start, Clock::now());
    if (!data.ok()) {
      line += " +" + std::to_string(static_cast<int>(size_mib)) + " MiB refused (" + data.status().to_string() + ");";
      break;
    }
    held.push_back(*data);
    const ex::cuda::PoolUsage usage = arena.usage();
    char part[160];
    std::snprintf(part, sizeof part, " +%.0f MiB -> reserved %.1f MiB, used %.1f MiB (%.0f us);", size_mib,
                  mib(usage.reserved), mib(usage.used), us);
    line += part;
  }
  std::printf("%s\n", line.c_str());
  const ex::staging::ArenaFacts facts = arena.facts();
  std::printf("    %s (id %d), granularity %zu KiB, chunks %zu KiB, range %zu MiB%s%s\n",
              ex::staging::location_name(facts.location_type), facts.location_id, facts.granularity >> 10,
              facts.chunk_bytes >> 10, facts.range_bytes >> 20, facts.host_access.empty() ? "" : "; host access: ",
              facts.host_access.c_str());
  if (kind == ex::staging::PoolKind::kPinnedHost && held.size() >= 2) {
    const std::size_t bytes = std::size_t{1} << 20;
    const bool touched = host_can_touch(held[0], bytes);
    bool copied = false;
    void* device = nullptr;
    if (touched && cudaMalloc(&device, bytes) == cudaSuccess) {
      std::memset(held[1], 0, bytes);
      copied = cudaMemcpyAsync(device, held[0], bytes, cudaMemcpyDefault, stream) == cudaSuccess &&
               cudaMemcpyAsync(held[1], device, bytes, cudaMemcpyDefault, stream) == cudaSuccess &&
               cudaStreamSynchronize(stream) == cudaSuccess && std::memcmp(held[0], held[1], bytes) == 0;
      cudaFree(device);
    }
    (void)cudaGetLastError();
    std::printf("    host-location memory from cuMemCreate: host writes %s, copies host -> device -> host %s\n",
                touched ? "work" : "FAULT", copied ? "right" : "WRONG or failed");
  }
  for (void* data : held) arena.free(data, stream);
  cudaStreamSynchronize(stream);
  const auto start = Clock::now();
  const ex::Status trimmed = arena.trim();
  std::printf("    all freed and trimmed: reserved %.1f MiB (%.0f us)%s\n", mib(arena.usage().reserved),
              us_between(start, Clock::now()), trimmed.ok() ? "" : trimmed.to_string().c_str());
}

void print_staging_sources() {
  for (const auto kind : {ex::staging::PoolKind::kDevice, ex::staging::PoolKind::kPinnedHost}) {
    auto pool = ex::staging::staging_pool(kind, 0);
    std::printf("  %s\n", pool.ok() ? (*pool)->describe().c_str() : pool.status().to_string().c_str());
  }
}

int run_probe() {
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return fail("no CUDA context");
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return fail("no stream");
  std::printf("staging_reserve the staging arenas: the driver's virtual memory management on device 0\n");
  print_vmm_facts();
  probe_arena("device arena", ex::staging::PoolKind::kDevice, stream);
  probe_arena("pinned host arena", ex::staging::PoolKind::kPinnedHost, stream);
  cudaStreamDestroy(stream);
  return 0;
}

struct Reserve {
  ex::cuda::PoolUsage device, host;
};

Reserve read_reserve() {
  const auto reserve = ex::staging::staging_reserve(0);
  Reserve r;
  if (reserve.ok()) {
    r.device = reserve->device;
    r.host = reserve->host;
  }
  return r;
}

void print_reserve(const char* what, const Reserve& r) {
  std::printf("  %s: device staging pool reserved %.2f MiB, used %.2f MiB; pinned host pool reserved %.2f MiB, used "
              "%.2f MiB\n",
              what, mib(r.device.reserved), mib(r.device.used), mib(r.host.reserved), mib(r.host.used));
}

int run_reserve(int models) {
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return fail("no CUDA context");
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return fail("no stream");
  std::printf("staging_reserve what CUDA's pools reserve (fresh pools, allocations kept one after another):\n");
  probe_pool("device pool", false, 0, stream);
  probe_pool("pinned host pool", true, 0, stream);
  probe_pool("device pool, maxSize 4 MiB", false, std::size_t{4} << 20, stream);
  probe_pool("pinned host pool, maxSize 4 MiB", true, std::size_t{4} << 20, stream);
  if (run_probe() != 0) return 1;

  const std::string path = std::string(TRTET_TEST_PROGRAM_DIR) + "/cold_host_1m.pte";
  std::vector<float> x(kCount, 1.0f), y(kCount, 2.0f);
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  std::vector<etr::EValue> inputs{etr::EValue(*tx), etr::EValue(*ty)};
  std::vector<std::unique_ptr<Module>> loaded;
  auto load_one = [&]() {
    auto module = std::make_unique<Module>(path);
    if (module->load_method("forward") != etr::Error::Ok) return false;
    ex::CudaStreamGuard guard(stream);
    auto outputs = module->forward(inputs);
    if (!outputs.ok()) return false;
    const float* out = outputs->at(0).toTensor().const_data_ptr<float>();
    if (out[0] != 2.0f * 1.0f - 0.5f * 2.0f || out[kCount - 1] != 1.0f) return false;
    loaded.push_back(std::move(module));
    return true;
  };
  const Reserve before = read_reserve();
  print_reserve("before any model", before);
  if (!load_one()) return fail("the first model does not load or run");
  const Reserve one = read_reserve();
  print_reserve("one model loaded and called", one);
  while (static_cast<int>(loaded.size()) < models) {
    if (!load_one()) return fail("a model does not load or run");
  }
  const Reserve many = read_reserve();
  char what[64];
  std::snprintf(what, sizeof what, "%d models loaded at once, each called", models);
  print_reserve(what, many);
  std::printf("  the process's staging:\n");
  print_staging_sources();
  loaded.clear();
  print_reserve("all unloaded (kept for the next load)", read_reserve());
  if (!ex::staging::trim_staging_reserve(0).ok()) return fail("trim failed");
  print_reserve("after trim_staging_reserve", read_reserve());

  const double limit = 4 * kMiB;
  const double one_device = static_cast<double>(one.device.reserved - before.device.reserved);
  const double one_host = static_cast<double>(one.host.reserved - before.host.reserved);
  std::printf("staging_reserve.one_model one model with 1 MiB pageable host I/O (x, y, out): reserves %.2f MiB device, %.2f MiB pinned "
              "host, for %.2f + %.2f MiB used (goal <= 4 MiB each: %s)\n",
              one_device / kMiB, one_host / kMiB, mib(one.device.used), mib(one.host.used),
              one_device <= limit && one_host <= limit ? "met" : "missed");
  const double device_ratio = static_cast<double>(many.device.reserved) / static_cast<double>(std::max<std::uint64_t>(1, many.device.used));
  const double host_ratio = static_cast<double>(many.host.reserved) / static_cast<double>(std::max<std::uint64_t>(1, many.host.used));
  std::printf("staging_reserve.many_models %d such models at once: reserved / used %.3f device (%.2f / %.2f MiB), %.3f pinned host (%.2f / "
              "%.2f MiB) (goal <= 1.25: %s)\n",
              models, device_ratio, mib(many.device.reserved), mib(many.device.used), host_ratio,
              mib(many.host.reserved), mib(many.host.used),
              device_ratio <= 1.25 && host_ratio <= 1.25 ? "met" : "missed");
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int loads = 20;
  int models = 16;
  std::string program;
  bool reserve = false;
  bool probe = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--loads") == 0 && has_value) loads = std::max(2, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--models") == 0 && has_value) models = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--program") == 0 && has_value) program = argv[++i];
    else if (std::strcmp(argv[i], "--reserve") == 0) reserve = true;
    else if (std::strcmp(argv[i], "--probe") == 0) probe = true;
    else return fail("usage: trtet-cold-start [--program host|device] [--reserve] [--probe] [--loads N] [--models M]");
  }
  if (probe) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return fail("no GPU");
    return run_probe();
  }
  if (program.empty() && !reserve) {
    // Each part in a process of its own, so each program's first load is the process's first.
    int failed = 0;
    const std::string self = argv[0];
    for (const std::string part : {"--program host", "--program device", "--reserve"}) {
      const std::string command = "'" + self + "' " + part + " --loads " + std::to_string(loads) + " --models " +
                                  std::to_string(models);
      std::fflush(stdout);
      if (std::system(command.c_str()) != 0) ++failed;
    }
    return failed == 0 ? 0 : 1;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-cold-start: no GPU\n");
    return 2;
  }
  etr::runtime_init();
  ex::ScopedEngineFactory factory([](const ex::EngineRequest& request) {
    return trtet_test::make_test_engine(
        std::string_view(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size), request.device);
  });
  if (reserve) return run_reserve(models);
  if (program != "host" && program != "device") return fail("--program is host or device");
  return run_program(program, loads);
}
