// Green-context partitions: a GPU's SMs split into disjoint slices, each with streams of its own.
//
// A CUDA green context owns a subset of a device's SMs; kernels launched on its streams run only
// there. Scope a CudaStreamGuard on a partition's stream around method->execute() and the engine
// runs inside that partition, so models on different partitions do not slow each other down.
//
//   auto partitions = split_device(/*device=*/0, {32}, Remainder::kKeep);  // 32 SMs + the rest
//   if (!partitions.ok()) puts(partitions.error().message().c_str());     // says what the GPU allows
//   GreenContext& mine = partitions->front();
//   { CudaStreamGuard guard(mine.stream()); method->execute(); }
//
// Nothing here throws: failures come back as a Result<T> holding an Error (Error.h), whose
// codes are the library's; a rejected split's Error also carries the device's limits and the
// closest request the GPU accepts.
// This header needs only the CUDA runtime (cudart); <cuda.h> is included for the CUgreenCtx type
// alone, and the library reaches the driver without linking libcuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <torch_tensorrt/executorch/Error.h>

#include <memory>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// Other names of the public error types (Error.h), for code written against them: the same
/// types, not copies. The library's headers use Error, ErrorCode and Result. GreenContextLimits is
/// defined in Error.h, beside the Error that carries it.
using GreenContextErrc = ErrorCode;
using GreenContextError = Error;
template <typename T>
using GreenContextResult = Result<T>;

/// One partition: a green context on a slice of a device's SMs and the streams made on it.
///
/// Move-only; the destructor never throws: it waits for the work queued on the partition's own
/// streams (never the device, never another partition), destroys those streams, then the green
/// context. Not thread-safe: one thread at a time may make streams on one GreenContext.
class GreenContext {
 public:
  GreenContext() noexcept;  ///< empty: owns nothing
  ~GreenContext();
  GreenContext(GreenContext&& other) noexcept;
  GreenContext& operator=(GreenContext&& other) noexcept;
  GreenContext(const GreenContext&) = delete;             // one owner per green context and its streams
  GreenContext& operator=(const GreenContext&) = delete;  // likewise

  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// The CUDA device (runtime index); -1 when empty.
  int device() const noexcept;
  /// The SMs the driver granted; 0 when empty.
  unsigned sm_count() const noexcept;
  /// The SMs asked for; 0 for the remainder and when empty.
  unsigned requested_sms() const noexcept;
  /// True for the partition of the SMs the requested ones left.
  bool is_remainder() const noexcept;

  /// The partition's first stream (non-blocking, made by split_device); nullptr when empty.
  cudaStream_t stream() const noexcept;
  /// Every stream the partition owns, in creation order. They stay valid until the partition is
  /// destroyed or reset; do not destroy them yourself.
  const std::vector<cudaStream_t>& streams() const noexcept;
  /// Makes one more non-blocking stream on this partition, owned by it. `priority`: lower is
  /// higher, clamped by the driver to the device's range. kInvalidState when empty; kInternal
  /// when the driver refuses.
  Result<cudaStream_t> make_stream(int priority = 0);

  /// The green context itself, still owned by this object, for driver-API calls of your own
  /// (nullptr when empty).
  CUgreenCtx handle() const noexcept;

  /// Waits for the owned streams, destroys them, then the green context; leaves this empty.
  void reset() noexcept;

 private:
  struct State;                      // defined by the library
  friend struct GreenContextAccess;  // the library's split_device fills state_
  std::unique_ptr<State> state_;
};

/// Whether split_device also makes a partition of the SMs the requested ones leave.
enum class Remainder {
  kDrop,  ///< only the requested partitions
  kKeep,  ///< one more partition, last, of every SM the requested ones did not take
};

/// The limits of `device`. Initialises the device's primary context (as the CUDA runtime does on
/// first use). kInvalidArgument for a bad device index; kNoDevice without a GPU; kNotSupported
/// where the driver has no green contexts.
Result<GreenContextLimits> green_context_limits(int device);

/// Splits `device`'s SMs, in one driver call, into disjoint partitions of `sm_counts` SMs each (in
/// that order), then, with Remainder::kKeep, one of the SMs left over. Each partition comes with
/// one stream. Partitions never share an SM.
///
/// Each count must be a multiple of limits().granularity and together at most
/// limits().max_partitioned_sms; otherwise kInvalidArgument, whose message names the limits and
/// whose limits() and closest_valid() are the device's limits and the nearest request the GPU
/// accepts (e.g. {30} -> {32}). Also kInvalidArgument: no counts, a count of 0, a remainder where
/// no SM is left, a bad device index. kNoDevice without a GPU, kNotSupported where the driver has
/// no green contexts, kInternal for a driver failure.
Result<std::vector<GreenContext>> split_device(int device, const std::vector<unsigned>& sm_counts,
                                               Remainder remainder = Remainder::kDrop);

}  // namespace torch_tensorrt::executorch_backend
