#include "session/stream_resolution.h"

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include <optional>

#include "cuda/check.h"
#include "cuda/stream_facts.h"
#include "green/current.h"

namespace torch_tensorrt::executorch_backend::delegate {

Status StreamResolver::initialize() {
  reset();
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  TRTET_ASSIGN_OR_RETURN(const unsigned long long id, cuda::stream_id(own_stream_));
  own_id_ = cuda::StreamId::of(id);
  return Status::Ok();
}

void StreamResolver::reset() noexcept {
  if (own_stream_ == nullptr) return;
  TRTET_CUDA_WARN(cudaStreamSynchronize(own_stream_));
  TRTET_CUDA_WARN(cudaStreamDestroy(own_stream_));
  own_stream_ = nullptr;
  own_id_ = cuda::StreamId();
  placements_ = {};
}

Result<StreamChoice> current_stream_choice() {
  const std::optional<cudaStream_t> selected = caller_stream();
  bool green_current = false;
  if (needs_green_context_query(selected)) {
    TRTET_ASSIGN_OR_RETURN(green_current, green::is_green_context_current());
  }
  return choose_stream(selected, green_current);
}

Result<ResolvedStream> StreamResolver::resolve(int engine_device, bool synchronous_enqueue) {
  ResolvedStream where;
  TRTET_ASSIGN_OR_RETURN(where.choice, current_stream_choice());
  TRTET_ASSIGN_OR_RETURN(where.facts.capturing, cuda::stream_is_capturing(where.choice.caller));
  if (where.joined()) {
    // The engine never gets a default stream (TensorRT adds device-wide synchronization for one):
    // the call runs on the own stream, joined to the caller's by events.
    TRTET_CHECK_OR_RETURN(!where.facts.capturing, kNotSupported,
                          "the stream being captured is a default stream (legacy or per-thread); capture on a "
                          "stream you created and select it with a CudaStreamGuard");
    where.stream = own_stream_;
    where.id = own_id_;
    where.facts.device = engine_device;
    where.facts.green_context = nullptr;  // made on the device's primary context
    where.green_known = true;
  } else {
    where.stream = where.choice.caller;
    if (where.facts.capturing) {
      TRTET_ASSIGN_OR_RETURN(where.facts.device, cuda::stream_device(where.stream, /*capturing=*/true));
    } else {
      TRTET_ASSIGN_OR_RETURN(where.facts.device, placement(where));
    }
    TRTET_CHECK_OR_RETURN(where.facts.device == engine_device, kInvalidArgument,
                          "the selected CUDA stream belongs to device %d, but the engine runs on device %d: select "
                          "a stream of device %d",
                          where.facts.device, engine_device, engine_device);
  }
  TRTET_CHECK_OR_RETURN(!(where.facts.capturing && synchronous_enqueue), kNotSupported,
                        "this engine enqueues synchronously (weight streaming is active) and cannot be captured "
                        "into a CUDA graph");
  return where;
}

Result<int> StreamResolver::placement(ResolvedStream& where) {
  // Streams are told apart by id, not handle: a destroyed stream's handle comes back for a new one.
  where.id = cuda::id_of(where.stream);  // unknown: ordered as a different stream, and not cached
  const Placement* found = nullptr;
  if (where.id.known()) {
    for (const Placement& placement : placements_) {
      if (placement.id.same_as(where.id)) {
        found = &placement;
        break;
      }
    }
  }
  Placement made;
  if (found == nullptr) {
    made.id = where.id;
    TRTET_ASSIGN_OR_RETURN(made.device, cuda::stream_device(where.stream, /*capturing=*/false));
    TRTET_ASSIGN_OR_RETURN(made.green, cuda::stream_green_context(where.stream));
    if (where.id.known()) {
      placements_[next_placement_] = made;
      next_placement_ = (next_placement_ + 1) % placements_.size();
    }
    found = &made;
  }
  where.facts.green_context = found->green;
  where.green_known = true;
  return found->device;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
