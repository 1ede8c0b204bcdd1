#include "contract_fuzz/gpu_world.h"

#include <cstdio>
#include <mutex>

#include "common/gpu.h"
#include "contract_fuzz/fuzz_kernels.h"
#include "cuda/check.h"
#include "engines/kernels.h"
#include "green/probe.h"

namespace trtet_test::fuzz {
namespace {

// Note [kernels loaded before any gate]
// CUDA loads a kernel lazily, at its first launch (CUDA_MODULE_LOADING=LAZY, the default on Linux
// since CUDA 12.2), and loading may synchronize the context (CUDA C++ Programming Guide, "Lazy
// Loading", its hazards: a kernel that spins until another kernel runs can deadlock). A test
// engine's first launch of a kernel inside a call whose stream a gate holds therefore waits for
// the gate's timeout, and the call looks as if it waited for its stream: seed 7's first call was
// the process's first launch of xor_bytes_kernel (the first engine with a side dtype). The
// delegate launches no kernel of its own when it executes; the engine's kernels are the test's.
// So every kernel a call or its caller work may launch is loaded here, by one launch on every
// context calls run on (the device's own and each green context's), before any gate is closed.
ex::Status load_kernels(cudaStream_t stream, Gate& gate) {
  constexpr std::size_t kBytes = kSmFlagCount * sizeof(int);
  void* scratch = nullptr;
  TRTET_CUDA_CHECK(cudaMalloc(&scratch, 2 * kBytes));
  auto* flags = static_cast<int*>(scratch);
  auto* data = reinterpret_cast<float*>(static_cast<unsigned char*>(scratch) + kBytes);
  ex::Status launched = [&]() -> ex::Status {
    TRTET_CUDA_CHECK(cudaMemsetAsync(scratch, 0, 2 * kBytes, stream));  // initialized: initcheck reads it
    TRTET_RETURN_IF_ERROR(launch_spin(0, 1, stream));
    TRTET_RETURN_IF_ERROR(launch_axpby(data, data, data + 1, 1, 1.0f, 1.0f, 0, flags, stream));
    TRTET_RETURN_IF_ERROR(launch_scale(data, data + 1, 1, 1.0f, 0, flags, stream));
    TRTET_RETURN_IF_ERROR(launch_add(data, data, data + 1, 1, 0, flags, stream));
    TRTET_RETURN_IF_ERROR(launch_sum(data, data + 1, 1, flags, stream));
    TRTET_RETURN_IF_ERROR(launch_mark_sms(flags, 1, 0, stream));
    TRTET_RETURN_IF_ERROR(launch_xor_bytes(data, data + 1, sizeof(float), stream));
    TRTET_ASSIGN_OR_RETURN(const Gate::Ticket ticket, gate.close(stream));
    gate.open(ticket);
    return ex::Status::Ok();
  }();
  const cudaError_t synced = cudaStreamSynchronize(stream);
  TRTET_CUDA_CHECK(cudaFree(scratch));
  TRTET_RETURN_IF_ERROR(launched);
  TRTET_CUDA_CHECK(synced);
  return ex::Status::Ok();
}

ex::Status make_world(std::vector<ex::green::Partition>& partitions, std::vector<std::vector<int>>& sms,
                      cudaStream_t* io, Gate& gate) {
  TRTET_CUDA_CHECK(cudaSetDevice(0));
  if (green_contexts_here()) {
    TRTET_ASSIGN_OR_RETURN(partitions,
                           ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true)));
    TRTET_CHECK_OR_RETURN(partitions.size() == 2, kInternal, "split_device made %zu partitions, expected 2",
                          partitions.size());
    for (ex::green::Partition& partition : partitions) {
      TRTET_ASSIGN_OR_RETURN(cudaStream_t stream, partition.context.make_stream());
      auto probed = ex::green::probe_sms(stream);
      TRTET_RETURN_IF_ERROR(partition.context.destroy_stream(stream));
      TRTET_RETURN_IF_ERROR(probed.status());
      sms.push_back(std::move(probed).value());
    }
  }
  for (int i = 0; i < kIoStreams; ++i) TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&io[i], cudaStreamNonBlocking));
  TRTET_ASSIGN_OR_RETURN(gate, Gate::create(trtet_test::under_sanitizer() ? kSanitizerGateTimeoutMs : kGateTimeoutMs));
  // Note [kernels loaded before any gate]: the device's own context, then each green context.
  TRTET_RETURN_IF_ERROR(load_kernels(io[0], gate));
  for (ex::green::Partition& partition : partitions) {
    TRTET_ASSIGN_OR_RETURN(cudaStream_t stream, partition.context.make_stream());
    const ex::Status loaded = load_kernels(stream, gate);
    TRTET_RETURN_IF_ERROR(partition.context.destroy_stream(stream));
    TRTET_RETURN_IF_ERROR(loaded);
  }
  return ex::Status::Ok();
}

}  // namespace

bool green_contexts_here() {
  const bool green = !trtet_test::green_contexts_unsupported_here();
  static std::once_flag said;
  if (!green) {
    std::call_once(said, [] {
      std::fprintf(stderr,
                   "contract-fuzz: under initcheck (TRTET_SANITIZER_TOOL=initcheck): no green contexts; sequences are "
                   "drawn with --no-green (each green-context stream becomes the created stream of its slot, each "
                   "green-current bad call a wrong-dtype one; every other draw as usual)\n");
      std::fflush(stderr);
    });
  }
  return green;
}

FuzzConfig as_run_here(FuzzConfig config) {
  if (!green_contexts_here()) config.green = false;
  return config;
}

GpuWorld::GpuWorld() { status_ = make_world(partitions_, sms_, io_, gate_); }

GpuWorld& GpuWorld::get() {
  // Never destroyed: streams and green contexts live until the process ends.
  static GpuWorld* world = new GpuWorld();
  return *world;
}

}  // namespace trtet_test::fuzz
