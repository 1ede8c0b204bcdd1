// Keeping what a captured CUDA graph uses alive for as long as the graph lives.
//
// A call recorded into the caller's capture leaves the graph pointing at session memory (device
// staging for pinned host I/O, the buffer bound to empty tensors) and at the session's completion
// event (see Note [ordering replays] in call_ordering.cpp). The graph may be replayed after a later
// eager call has outgrown that staging, or after the session is destroyed. So the session shares
// those objects with the graph: a CUDA user object, retained by the graph under capture, owns a
// second reference, and whichever owner lets go last frees them.
//
// The driver releases the user object on its own thread, where no CUDA call is allowed, once the
// graph and every launch of it are gone: the release only moves the references to a list that
// the next session call (any thread that may make CUDA calls) drains.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"

namespace torch_tensorrt::executorch_backend::delegate {

using SharedBuffer = std::shared_ptr<cuda::DeviceBuffer>;
using SharedEvent = std::shared_ptr<cuda::Event>;

/// What one captured call uses.
struct GraphHold {
  int device = 0;
  std::vector<SharedBuffer> buffers;
  std::vector<SharedEvent> events;
};

/// Makes the graph being captured on `stream` hold `hold` until the graph is destroyed.
Status retain_in_capture(cudaStream_t stream, GraphHold hold);

/// The session lets go of `buffer`, last used by work that `after` (recorded, on the buffer's
/// device, current) covers. Freed at once when no graph holds it, else once the last graph
/// holding it is gone; either way, in order after `after`. Never synchronizes.
void release_shared(SharedBuffer buffer, cudaEvent_t after) noexcept;

/// Frees what graphs that are gone held. Cheap when nothing is waiting; called on every execute.
void drain_released_graph_holds() noexcept;

}  // namespace torch_tensorrt::executorch_backend::delegate
