#include "delegate/host_transfers.h"

#include <algorithm>
#include <cstring>

#include "cuda/check.h"
#include "delegate/load_trace.h"
#include "delegate/staging_layout.h"

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

/// The process's copy pool; its first use starts the workers (timed as a load step).
HostCopyPool& copy_pool() {
  TimedStep step("copy pool");
  return HostCopyPool::shared();
}

}  // namespace

Status HostTransfers::ensure_chunk_events(std::size_t count) {
  if (chunk_events_.size() >= count) return Status::Ok();
  TimedStep step("chunk events");
  while (chunk_events_.size() < count) {
    TRTET_ASSIGN_OR_RETURN(cuda::Event event, cuda::Event::create());
    chunk_events_.push_back(std::move(event));
  }
  return Status::Ok();
}

Status HostTransfers::send(unsigned char* device, const unsigned char* from, unsigned char* staging,
                           std::size_t bytes, cudaStream_t stream) {
  const std::size_t chunk = chunk_bytes(bytes);
  const std::size_t slice = slice_bytes(chunk);
  if (bytes <= slice) {
    std::memcpy(staging, from, bytes);
    TRTET_CUDA_CHECK(cudaMemcpyAsync(device, staging, bytes, cudaMemcpyHostToDevice, stream));
    return Status::Ok();
  }
  // The pool's workers copy slices into pinned staging; this thread queues each chunk's
  // transfer, on the call's stream, as soon as all of that chunk's slices are copied.
  input_copies_.clear();
  for (std::size_t offset = 0; offset < bytes; offset += slice) {
    input_copies_.push_back(CopyTask{staging + offset, from + offset, std::min(slice, bytes - offset)});
  }
  const std::size_t slices_per_chunk = chunk / slice;  // chunk_bytes() is a whole number of slices
  HostCopyPool& pool = copy_pool();
  CopyBatch batch(input_copies_);
  pool.begin(batch, input_copies_.size());
  cudaError_t error = cudaSuccess;
  for (std::size_t first = 0; first < input_copies_.size() && error == cudaSuccess; first += slices_per_chunk) {
    const std::size_t end = std::min(first + slices_per_chunk, input_copies_.size());
    for (std::size_t t = first; t < end; ++t) pool.help_until_done(batch, t);
    const std::size_t offset = first * slice;
    const std::size_t length = std::min(chunk, bytes - offset);
    error = cudaMemcpyAsync(device + offset, staging + offset, length, cudaMemcpyHostToDevice, stream);
  }
  pool.finish(batch);
  TRTET_CUDA_CHECK(error);
  return Status::Ok();
}

void HostTransfers::begin_outputs() noexcept {
  output_copies_.clear();
  output_chunk_ends_.clear();
}

Status HostTransfers::queue_receive(unsigned char* to, const unsigned char* device, unsigned char* staging,
                                    std::size_t bytes, cudaStream_t stream) {
  const std::size_t chunk = chunk_bytes(bytes);
  const std::size_t slice = slice_bytes(chunk);
  for (std::size_t offset = 0; offset < bytes; offset += chunk) {
    const std::size_t length = std::min(chunk, bytes - offset);
    TRTET_CUDA_CHECK(cudaMemcpyAsync(staging + offset, device + offset, length, cudaMemcpyDeviceToHost, stream));
    TRTET_RETURN_IF_ERROR(chunk_events_[output_chunk_ends_.size()].record(stream));  // sized by ensure_chunk_events
    for (std::size_t part = 0; part < length; part += slice) {
      output_copies_.push_back(CopyTask{to + offset + part, staging + offset + part, std::min(slice, length - part)});
    }
    output_chunk_ends_.push_back(output_copies_.size());
  }
  return Status::Ok();
}

Status HostTransfers::finish_receives() {
  const std::size_t count = output_copies_.size();
  if (count == 0) return Status::Ok();
  if (count == 1) {
#ifndef TRTET_PLANT_PAGEABLE_OUTPUT_EARLY  // planted bug: copied out before the transfer (and engine) ends
    TRTET_RETURN_IF_ERROR(chunk_events_[0].synchronize());
#endif
    std::memcpy(output_copies_[0].destination, output_copies_[0].source, output_copies_[0].bytes);
    return Status::Ok();
  }
  // This thread waits for each chunk's transfer and hands the chunk's slices to the pool's
  // workers, which copy them out while later chunks are still in flight; at the end it copies
  // slices too. Workers never wait for the GPU.
  HostCopyPool& pool = copy_pool();
  CopyBatch batch(output_copies_);
  pool.begin(batch, 0);
  Status waited;
  for (std::size_t c = 0; c < output_chunk_ends_.size() && waited.ok(); ++c) {
#ifndef TRTET_PLANT_PAGEABLE_OUTPUT_EARLY
    waited = chunk_events_[c].synchronize();
#endif
    if (waited.ok()) pool.publish(batch, output_chunk_ends_[c]);
  }
  pool.finish(batch);
  return waited;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
