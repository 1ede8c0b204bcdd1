// The host side of pageable staging for one session: inputs copied into pinned staging slice by
// slice and sent chunk by chunk; outputs received chunk by chunk and copied out as each lands
// (docs/DESIGN.md, "Staging"; the layout: staging_layout.h; the workers: host_copy_pool.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "cuda/event.h"
#include "delegate/host_copy_pool.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Owns the per-chunk events and the copy lists; the staging memory itself is the StagingStore's.
/// Used under the session's lock: a call with pageable memory finishes its host copies before it
/// releases it (Note [pipelined calls] in call_ordering.h).
class HostTransfers {
 public:
  /// Makes chunk events until there are `count`: one per chunk of pageable output of a call, so
  /// each chunk is copied out as soon as it lands. Made at initialize (a staging budget) or when a
  /// call first needs them.
  Status ensure_chunk_events(std::size_t count);

  /// Copies `bytes` of pageable `from` into `staging` (pinned) with the shared copy pool and queues
  /// each chunk's transfer to `device` on `stream` as soon as its slices are in.
  Status send(unsigned char* device, const unsigned char* from, unsigned char* staging, std::size_t bytes,
              cudaStream_t stream);

  /// Starts a call's outputs: forgets the previous call's chunks.
  void begin_outputs() noexcept;
  /// Queues the transfers of `bytes` of `device` into `staging` chunk by chunk on `stream`, each
  /// followed by its chunk event, and lists the host copies into `to` that follow them.
  Status queue_receive(unsigned char* to, const unsigned char* device, unsigned char* staging, std::size_t bytes,
                       cudaStream_t stream);
  /// Waits for each queued chunk's event and hands its slices to the copy pool; returns once every
  /// output byte is in host memory.
  Status finish_receives();

  void reset() noexcept { chunk_events_.clear(); }

 private:
  std::vector<cuda::Event> chunk_events_;
  std::vector<CopyTask> output_copies_;        ///< slices of pageable output chunks, in order
  std::vector<std::size_t> output_chunk_ends_; ///< per chunk: the end of its slices in output_copies_
  std::vector<CopyTask> input_copies_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
