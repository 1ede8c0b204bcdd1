// How host I/O is laid out in staging: pageable chunks and their host-copy slices, and which
// staging slot a call takes (Note [pipelined calls] in session/call_ordering.cpp). Pure functions,
// tested on the CPU.
#pragma once

#include <algorithm>
#include <cstddef>

namespace torch_tensorrt::executorch_backend::staging {

/// Pageable chunks are copied on the host in slices of this size by several threads at once, so
/// the first transfer starts, and the last output lands, after one slice's copy rather than a
/// whole chunk's.
constexpr std::size_t kCopySlice = std::size_t{128} << 10;
/// A pageable tensor moves in at most this many chunks...
constexpr std::size_t kMaxChunks = 16;
/// ...of at least this many bytes.
constexpr std::size_t kMinChunk = std::size_t{1} << 20;

/// The bytes per transfer of a pageable tensor of `bytes`: enough chunks that the host copy of one
/// overlaps the transfer of another, none so small that per-copy overhead shows; a whole number of
/// slices. (host_staging.pageable's reference sweeps the layouts: docs/PERFORMANCE.md.)
constexpr std::size_t chunk_bytes(std::size_t bytes) noexcept {
  const std::size_t share = bytes / kMaxChunks + (bytes % kMaxChunks != 0 ? 1 : 0);
  const std::size_t slices = share / kCopySlice + (share % kCopySlice != 0 ? 1 : 0);
  return std::max(kMinChunk, slices * kCopySlice);
}

/// The largest chunk moved between device memory and page-locked staging by a copy kernel on the
/// call's stream rather than by the copy engines (Note [small copies] in small_copy.cu).
constexpr std::size_t kKernelCopyMaxBytes = std::size_t{64} << 10;

/// True when a chunk of `bytes` goes through the copy kernel: not empty, at most kKernelCopyMaxBytes.
constexpr bool copy_by_kernel(std::size_t bytes) noexcept { return bytes > 0 && bytes <= kKernelCopyMaxBytes; }

/// The bytes one host thread copies at a time within a chunk.
constexpr std::size_t slice_bytes(std::size_t chunk) noexcept { return std::min(chunk, kCopySlice); }

/// The staging slot of a call that stages, among `slots`: the first call takes slot 0 (which a
/// staging budget made at initialize); a call on the stream of the last call that staged keeps its
/// slot (`last`), which the stream orders; so does a capture (it cannot allocate, and a warm-up
/// call sized that slot); a call on another stream takes the next slot, so it can overlap the last.
constexpr int choose_slot(bool staged_before, bool same_stream, bool capturing, int last, int slots) noexcept {
  if (!staged_before) return 0;
  if (same_stream || capturing) return last;
  return (last + 1) % slots;
}

}  // namespace torch_tensorrt::executorch_backend::staging
