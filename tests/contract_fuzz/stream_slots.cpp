#include "contract_fuzz/stream_slots.h"

#include "cuda/check.h"

namespace trtet_test::fuzz {
namespace {

ex::green::DriverGreenContext& partition_of(GpuWorld& world, int slot) { return world.partition(slot < 2 ? 0 : 1).context; }

}  // namespace

StreamSlots::~StreamSlots() {
  for (cudaStream_t& s : created_) {
    if (s != nullptr) TRTET_CUDA_WARN(cudaStreamDestroy(s));
  }
  for (int slot = 0; slot < kGreenSlots; ++slot) {
    if (green_[slot] == nullptr) continue;
    const ex::Status destroyed = partition_of(world_, slot).destroy_stream(green_[slot]);
    (void)destroyed;  // at teardown: the green context logs its own failures
  }
}

ex::Status StreamSlots::create() {
  for (cudaStream_t& s : created_) TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (!world_.has_green()) return ex::Status::Ok();  // green slots stay empty (FuzzConfig::green)
  for (int slot = 0; slot < kGreenSlots; ++slot) {
    TRTET_ASSIGN_OR_RETURN(green_[slot], partition_of(world_, slot).make_stream());
  }
  return ex::Status::Ok();
}

cudaStream_t StreamSlots::get(const StreamRef& ref) const {
  switch (ref.source) {
    case StreamSource::kPerThread: return cudaStreamPerThread;
    case StreamSource::kLegacy: return nullptr;
    case StreamSource::kCreated: return created_[ref.slot];
    case StreamSource::kGreen: return green_[ref.slot];
  }
  return cudaStreamPerThread;
}

ex::Status StreamSlots::recreate(const StreamRef& ref, bool non_blocking) {
  if (ref.source == StreamSource::kCreated) {
    cudaStream_t& s = created_[ref.slot];
    TRTET_CUDA_CHECK(cudaStreamSynchronize(s));
    TRTET_CUDA_CHECK(cudaStreamDestroy(s));
    s = nullptr;
    TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
  } else if (ref.source == StreamSource::kGreen) {
    TRTET_CHECK_OR_RETURN(world_.has_green(), kInternal, "a green-context stream, but this process makes no green contexts");
    cudaStream_t& s = green_[ref.slot];
    TRTET_RETURN_IF_ERROR(partition_of(world_, ref.slot).destroy_stream(s));  // waits for it first
    s = nullptr;
    TRTET_ASSIGN_OR_RETURN(s, partition_of(world_, ref.slot).make_stream());
  }
  return ex::Status::Ok();
}

ex::Status StreamSlots::synchronize_all() const {
  for (cudaStream_t s : created_) {
    if (s != nullptr) TRTET_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  for (cudaStream_t s : green_) {
    if (s != nullptr) TRTET_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  TRTET_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  TRTET_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return ex::Status::Ok();
}

}  // namespace trtet_test::fuzz
