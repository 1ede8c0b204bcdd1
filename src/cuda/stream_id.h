// A stream's process-unique identity, as a type: known or unknown, never "0 by convention".
#pragma once

#include <cuda_runtime_api.h>

namespace torch_tensorrt::executorch_backend::cuda {

/// The id cudaStreamGetId gives a stream. Handles are reused after a stream is destroyed, ids never
/// are, so streams are told apart by this. An id that could not be read (a capturing stream, a
/// failed query) is unknown, and an unknown id is the same as no stream, not even another unknown
/// one: code that orders calls by stream treats it as a different stream, which is always safe.
class StreamId {
 public:
  constexpr StreamId() noexcept = default;  ///< unknown
  static constexpr StreamId of(unsigned long long id) noexcept { return StreamId(id); }

  constexpr bool known() const noexcept { return known_; }
  /// True only when both ids are known and equal.
  constexpr bool same_as(StreamId other) const noexcept { return known_ && other.known_ && id_ == other.id_; }
  /// The driver's id; 0 when unknown (for printing only).
  constexpr unsigned long long value() const noexcept { return known_ ? id_ : 0; }

 private:
  constexpr explicit StreamId(unsigned long long id) noexcept : id_(id), known_(true) {}
  unsigned long long id_ = 0;
  bool known_ = false;
};

/// The id of `stream`, or unknown where the driver cannot tell it (see stream_facts.h, stream_id()).
StreamId id_of(cudaStream_t stream) noexcept;

}  // namespace torch_tensorrt::executorch_backend::cuda
