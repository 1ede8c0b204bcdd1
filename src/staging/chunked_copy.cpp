#include "staging/chunked_copy.h"

#include <algorithm>
#include <cstring>

#include "common/load_trace.h"
#include "cuda/check.h"
#include "staging/layout.h"
#include "staging/small_copy.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

/// The process's copy pool; its first use starts the workers (timed as a load step).
HostCopyPool& copy_pool() {
  TimedStep step("copy pool");
  return HostCopyPool::shared();
}

/// The slices of `bytes` from `from` to `to`, appended to `tasks`.
void add_slices(std::vector<CopyTask>& tasks, unsigned char* to, const unsigned char* from, std::size_t bytes) {
  for (std::size_t offset = 0; offset < bytes; offset += kCopySlice) {
    tasks.push_back(CopyTask{to + offset, from + offset, std::min(kCopySlice, bytes - offset)});
  }
}

/// The bytes of one round of a copy in chunks of `chunk` through `chunks`.
std::size_t round_bytes(std::size_t chunk, const PinnedChunks& chunks) noexcept {
  const std::size_t most = chunks.most_chunks();
  return most > PinnedChunks::kNoLimit / chunk ? PinnedChunks::kNoLimit : most * chunk;
}

}  // namespace

Result<PinnedChunk> ContiguousChunks::take(std::size_t offset, std::size_t /*bytes*/) {
  PinnedChunk chunk{staging_ + offset, events_};
  if (events_ != nullptr) ++events_;
  return chunk;
}

std::size_t chunk_bytes_of(std::size_t bytes, const PinnedChunks& chunks) noexcept {
  return std::min(chunk_bytes(bytes), chunks.most_chunk_bytes());
}

std::size_t chunk_count(std::size_t bytes) noexcept {
  const std::size_t chunk = chunk_bytes(bytes);
  return (bytes + chunk - 1) / chunk;
}

void prepare_small_copies() noexcept { (void)kernel_copies_on_current_device(); }

Status queue_transfer(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                      bool small_by_kernel, bool* kernel) {
  const bool by_kernel = small_by_kernel && copy_by_kernel(bytes) && kernel_copies_on_current_device();
  if (by_kernel) {
    TRTET_RETURN_IF_ERROR(kernel_copy(to, from, bytes, stream));
  } else {
    TRTET_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, kind, stream));
  }
  if (kernel != nullptr) *kernel = by_kernel;
  return Status::Ok();
}

Status ChunkedCopy::transfer(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                             const PinnedChunks& chunks) {
  bool kernel = false;
  TRTET_RETURN_IF_ERROR(queue_transfer(to, from, bytes, kind, stream, chunks.small_by_kernel(), &kernel));
  ++(kernel ? kernel_transfers_ : engine_transfers_);
  return Status::Ok();
}

Status ChunkedCopy::send(unsigned char* device, const unsigned char* from, std::size_t bytes, cudaStream_t stream,
                         PinnedChunks& chunks) {
  const std::size_t chunk = chunk_bytes_of(bytes, chunks);
  const std::size_t round = round_bytes(chunk, chunks);
  for (std::size_t at = 0; at < bytes; at += round) {
    const std::size_t length = std::min(round, bytes - at);
    // Every chunk of the round, ready to be written, and its slices.
    send_tasks_.clear();
    send_ends_.clear();
    sent_.clear();
    for (std::size_t offset = 0; offset < length; offset += chunk) {
      const std::size_t part = std::min(chunk, length - offset);
      TRTET_ASSIGN_OR_RETURN(const PinnedChunk taken, chunks.take(at + offset, part));
      add_slices(send_tasks_, taken.data, from + at + offset, part);
      send_ends_.push_back(send_tasks_.size());
      sent_.push_back(taken);
    }
    auto queue_chunk = [&](std::size_t c) -> Status {
      const std::size_t offset = c * chunk;
      const std::size_t part = std::min(chunk, length - offset);
      TRTET_RETURN_IF_ERROR(transfer(device + at + offset, sent_[c].data, part, cudaMemcpyHostToDevice, stream, chunks));
      if (sent_[c].landed != nullptr) TRTET_RETURN_IF_ERROR(sent_[c].landed->record(stream));
      return Status::Ok();
    };
    if (send_tasks_.size() == 1) {  // one slice: no hand-off to the workers
      std::memcpy(send_tasks_[0].destination, send_tasks_[0].source, send_tasks_[0].bytes);
      TRTET_RETURN_IF_ERROR(queue_chunk(0));
      continue;
    }
    // The pool's workers copy slices into the chunks; this thread queues each chunk's transfer,
    // on the caller's stream, as soon as all of that chunk's slices are copied.
    HostCopyPool& pool = copy_pool();
    CopyBatch batch(send_tasks_);
    pool.begin(batch, send_tasks_.size());
    Status queued;
    for (std::size_t c = 0, first = 0; c < send_ends_.size() && queued.ok(); first = send_ends_[c++]) {
      for (std::size_t t = first; t < send_ends_[c]; ++t) pool.help_until_done(batch, t);
      queued = queue_chunk(c);
    }
    pool.finish(batch);
    TRTET_RETURN_IF_ERROR(queued);
  }
  return Status::Ok();
}

Status ChunkedCopy::queue_round(unsigned char* to, const unsigned char* device, std::size_t offset,
                                std::size_t bytes, std::size_t chunk, cudaStream_t stream, PinnedChunks& chunks) {
  for (std::size_t at = offset; at < offset + bytes; at += chunk) {
    const std::size_t length = std::min(chunk, offset + bytes - at);
    TRTET_ASSIGN_OR_RETURN(const PinnedChunk taken, chunks.take(at, length));
    TRTET_RETURN_IF_ERROR(transfer(taken.data, device + at, length, cudaMemcpyDeviceToHost, stream, chunks));
    TRTET_RETURN_IF_ERROR(taken.landed->record(stream));  // a received chunk always has its event
    add_slices(tasks_, to + at, taken.data, length);
    chunk_ends_.push_back(tasks_.size());
    chunk_events_.push_back(taken.landed);
  }
  return Status::Ok();
}

Status ChunkedCopy::queue_receive(unsigned char* to, const unsigned char* device, std::size_t bytes,
                                  cudaStream_t stream, PinnedChunks& chunks) {
  return queue_round(to, device, 0, bytes, chunk_bytes_of(bytes, chunks), stream, chunks);
}

Status ChunkedCopy::receive(unsigned char* to, const unsigned char* device, std::size_t bytes, cudaStream_t stream,
                            PinnedChunks& chunks) {
  const std::size_t chunk = chunk_bytes_of(bytes, chunks);
  const std::size_t round = round_bytes(chunk, chunks);
  for (std::size_t at = 0; at < bytes; at += round) {
    clear();
    TRTET_RETURN_IF_ERROR(queue_round(to, device, at, std::min(round, bytes - at), chunk, stream, chunks));
    TRTET_RETURN_IF_ERROR(finish_receives());
  }
  return Status::Ok();
}

void ChunkedCopy::clear() noexcept {
  tasks_.clear();
  chunk_ends_.clear();
  chunk_events_.clear();
}

Status ChunkedCopy::finish_receives() {
  const std::size_t count = tasks_.size();
  if (count == 0) return Status::Ok();
  if (count == 1) {
    TRTET_CUDA_CHECK(cudaEventSynchronize(chunk_events_[0]->get()));
    std::memcpy(tasks_[0].destination, tasks_[0].source, tasks_[0].bytes);
    clear();
    return Status::Ok();
  }
  // This thread waits for each chunk's transfer and hands the chunk's slices to the pool's
  // workers, which copy them out while later chunks are still in flight; at the end it copies
  // slices too. Workers never wait for the GPU.
  HostCopyPool& pool = copy_pool();
  CopyBatch batch(tasks_);
  pool.begin(batch, 0);
  Status waited;
  for (std::size_t c = 0; c < chunk_ends_.size() && waited.ok(); ++c) {
    if (const cudaError_t e = cudaEventSynchronize(chunk_events_[c]->get()); e != cudaSuccess) {
      waited = cuda::runtime_status(e, "cudaEventSynchronize(chunk event)", __FILE__, __LINE__);
    }
    if (waited.ok()) pool.publish(batch, chunk_ends_[c]);
  }
  pool.finish(batch);
  clear();
  return waited;
}

}  // namespace torch_tensorrt::executorch_backend::staging
