#include "contract_fuzz/gpu_world.h"

#include "cuda/check.h"

namespace trtet_test::fuzz {
namespace {

ex::Status make_world(std::vector<ex::green::Partition>& partitions, cudaStream_t* io) {
  TRTET_CUDA_CHECK(cudaSetDevice(0));
  TRTET_ASSIGN_OR_RETURN(partitions,
                         ex::green::split_device(0, ex::green::SplitRequest::counts({16}, /*remainder=*/true)));
  TRTET_CHECK_OR_RETURN(partitions.size() == 2, kInternal, "split_device made %zu partitions, expected 2",
                        partitions.size());
  for (int i = 0; i < kIoStreams; ++i) TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&io[i], cudaStreamNonBlocking));
  return ex::Status::Ok();
}

}  // namespace

GpuWorld::GpuWorld() { status_ = make_world(partitions_, io_); }

GpuWorld& GpuWorld::get() {
  // Never destroyed: streams and green contexts live until the process ends.
  static GpuWorld* world = new GpuWorld();
  return *world;
}

}  // namespace trtet_test::fuzz
