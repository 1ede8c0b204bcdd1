// Pageable host memory moved to and from the device through pinned chunks: the host side copied by
// the shared host copy pool slice by slice, each chunk's transfer queued on the caller's stream as
// soon as its slices are in, and each received chunk copied out as soon as it lands. One part for
// both users of pageable copies: a session's host staging (docs/DESIGN.md, "Staging") and the
// ExecuTorch allocator's staging ring (boundary/boundary_transfers.h). Part of the staging layer's
// interface with staging.h. The chunk policy is layout.h's chunk_bytes() (included: its smallest
// chunk sizes the boundary's rings); the workers: host_copy_pool.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <vector>

#include "common/status.h"
#include "cuda/event.h"
#include "staging/host_copy_pool.h"
#include "staging/layout.h"

namespace torch_tensorrt::executorch_backend::staging {

/// One pinned chunk a transfer goes through.
struct PinnedChunk {
  unsigned char* data = nullptr;
  /// Recorded on the stream after the chunk's transfer (null: nothing needs to know when it ends).
  cuda::Event* landed = nullptr;
};

/// Where a chunked copy takes its pinned chunks from.
class PinnedChunks {
 public:
  static constexpr std::size_t kNoLimit = std::numeric_limits<std::size_t>::max();

  /// The chunk that holds bytes [offset, offset + bytes) of the copy now being made, ready to be
  /// written (whatever used it before is done).
  virtual Result<PinnedChunk> take(std::size_t offset, std::size_t bytes) = 0;
  /// The most chunks a copy holds at once (a round); the next round reuses them once the round is
  /// over. kNoLimit: the chunks hold the whole tensor.
  virtual std::size_t most_chunks() const noexcept { return kNoLimit; }
  /// The most bytes one chunk holds (a whole number of kCopySlice); kNoLimit: chunk_bytes() decides.
  virtual std::size_t most_chunk_bytes() const noexcept { return kNoLimit; }
  /// True when a small chunk may move by the copy kernel (Note [small copies] in small_copy.cu): the
  /// device reads and writes the chunks at their host addresses (page-locked memory of cudaHostAlloc
  /// or of the staging pools and arenas), and the stream the copy runs on has SMs of its own (a
  /// green context). False: every transfer uses the copy engines.
  virtual bool small_by_kernel() const noexcept { return false; }

 protected:
  ~PinnedChunks() = default;
};

/// Pinned staging that holds a whole tensor (a session's host staging of one binding): chunk i at
/// its offset, with the next event of `events` (received chunks), or none (sent chunks).
class ContiguousChunks final : public PinnedChunks {
 public:
  /// `on_partition`: the copy's stream runs on a green context (a session's staging is device-mapped,
  /// so that decides small_by_kernel).
  ContiguousChunks(unsigned char* staging, cuda::Event* events, bool on_partition) noexcept
      : staging_(staging), events_(events), on_partition_(on_partition) {}
  Result<PinnedChunk> take(std::size_t offset, std::size_t bytes) override;
  bool small_by_kernel() const noexcept override { return on_partition_; }

 private:
  unsigned char* staging_;
  cuda::Event* events_;  ///< one per chunk, in order (null: none)
  bool on_partition_;
};

/// The bytes per chunk of a copy of `bytes` through `chunks`: chunk_bytes(), within the chunks' limit.
std::size_t chunk_bytes_of(std::size_t bytes, const PinnedChunks& chunks) noexcept;

/// The chunks a copy of `bytes` through staging that holds it whole takes.
std::size_t chunk_count(std::size_t bytes) noexcept;

/// Loads the copy kernel of small transfers on the current device, and asks once whether it applies
/// there (Note [small copies] in small_copy.cu). For load time: CUDA loads a kernel at its first
/// launch otherwise, and that load waits for the work running on the device.
void prepare_small_copies() noexcept;

/// Queues one transfer of `bytes` between device memory and page-locked host memory on `stream`: a
/// copy kernel where `small_by_kernel` (the device reads the host side at its address and `stream`
/// runs on a green context) and the transfer is small (copy_by_kernel in layout.h; Note [small
/// copies] in small_copy.cu), else the copy engines (cudaMemcpyAsync of `kind`). `kernel`, where
/// given, is set to which it was.
Status queue_transfer(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                      bool small_by_kernel, bool* kernel = nullptr);

/// Moves pageable memory through pinned chunks. Holds the copy lists of the receives it has queued
/// and not finished; one copy at a time (its owner serializes it).
class ChunkedCopy {
 public:
  /// Copies `bytes` of pageable `from` into the chunks with the shared copy pool and queues each
  /// chunk's transfer to `device` on `stream` as soon as its slices are in, round by round (a round
  /// waits for the chunks it reuses). Returns once `from` has been read.
  Status send(unsigned char* device, const unsigned char* from, std::size_t bytes, cudaStream_t stream,
              PinnedChunks& chunks);

  /// Queues the transfers of `bytes` of `device` into the chunks on `stream`, each followed by its
  /// chunk's event, and lists the host copies into `to` that follow them. One round: the chunks
  /// hold the whole tensor. finish_receives() copies them out.
  Status queue_receive(unsigned char* to, const unsigned char* device, std::size_t bytes, cudaStream_t stream,
                       PinnedChunks& chunks);
  /// Waits for each queued chunk's event and hands its slices to the copy pool; returns once every
  /// byte queued since the last finish is in host memory.
  Status finish_receives();
  /// Receives `bytes` of `device` into pageable `to` round by round (each round queued, then
  /// finished): returns with the data in host memory.
  Status receive(unsigned char* to, const unsigned char* device, std::size_t bytes, cudaStream_t stream,
                 PinnedChunks& chunks);

  /// Chunks queued by queue_receive since the last finish (each took one event).
  std::size_t queued_chunks() const noexcept { return chunk_events_.size(); }
  /// Chunk transfers queued so far as copy kernels and on the copy engines (Note [small copies]).
  std::size_t kernel_transfers() const noexcept { return kernel_transfers_; }
  std::size_t engine_transfers() const noexcept { return engine_transfers_; }
  /// Forgets queued receives (a call that failed before finishing them).
  void clear() noexcept;

 private:
  /// Queues one round of a receive: up to the chunks' most_chunks() chunks from `offset`.
  Status queue_round(unsigned char* to, const unsigned char* device, std::size_t offset, std::size_t bytes,
                     std::size_t chunk, cudaStream_t stream, PinnedChunks& chunks);

  /// Queues one chunk's transfer on `stream`: a copy kernel for a small chunk the device maps
  /// (Note [small copies]), else the copy engines.
  Status transfer(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                  const PinnedChunks& chunks);

  std::size_t kernel_transfers_ = 0;
  std::size_t engine_transfers_ = 0;
  // Queued receives (kept until finish_receives or clear).
  std::vector<CopyTask> tasks_;              ///< slices of the queued chunks, in order
  std::vector<std::size_t> chunk_ends_;      ///< per chunk: the end of its slices in tasks_
  std::vector<cuda::Event*> chunk_events_;   ///< per received chunk: its event
  // One round of a send, apart from the receives: a send between a queue_receive and its
  // finish_receives leaves the queued receives as they were.
  std::vector<CopyTask> send_tasks_;         ///< slices of the round's chunks, in order
  std::vector<std::size_t> send_ends_;       ///< per chunk: the end of its slices in send_tasks_
  std::vector<PinnedChunk> sent_;            ///< per chunk of the round: where it went
};

}  // namespace torch_tensorrt::executorch_backend::staging
