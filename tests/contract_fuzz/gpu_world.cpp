#include "contract_fuzz/gpu_world.h"

#include <cstdio>
#include <mutex>

#include "common/gpu.h"
#include "cuda/check.h"
#include "green/probe.h"

namespace trtet_test::fuzz {
namespace {

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
