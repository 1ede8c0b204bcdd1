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
// Nothing here throws: failures come back as a GreenContextResult holding a GreenContextError.
// This header needs only the CUDA runtime (cudart); <cuda.h> is included for the CUgreenCtx type
// alone, and the library reaches the driver without linking libcuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// What a GPU allows when its SMs are split into green contexts (the driver's SM resource).
/// On the H200: 132 SMs, minimum partition 8, alignment 8, so partitions of 8, 16, ..., 128 SMs;
/// one split hands out at most 16 groups of 8 (128 SMs) and the other 4 form the remainder.
struct GreenContextLimits {
  int device = -1;
  unsigned sm_count = 0;           ///< SMs of the device
  unsigned min_partition = 0;      ///< the smallest partition the driver makes
  unsigned alignment = 0;          ///< partition sizes are multiples of this
  unsigned granularity = 0;        ///< every partition is a multiple of this: min_partition rounded up to alignment
  unsigned max_partitioned_sms = 0;  ///< the most SMs one split hands out to requested partitions
};

/// What kind of failure a GreenContextError reports.
enum class GreenContextErrc {
  kInvalidArgument,  ///< a request the GPU cannot satisfy, or a bad device index: see message()
  kNoDevice,         ///< no usable CUDA device or driver
  kNotSupported,     ///< the driver or device has no green contexts
  kInvalidState,     ///< the call needs a non-empty GreenContext
  kInternal,         ///< a CUDA driver failure
};

/// Why a green-context call failed. message() says what was wrong and, for a rejected split, what
/// the GPU allows (granularity, minimum partition, alignment) and the closest request it accepts.
class GreenContextError {
 public:
  GreenContextError(GreenContextErrc code, std::string message, GreenContextLimits limits = {},
                    std::vector<unsigned> closest_valid = {})
      : code_(code), message_(std::move(message)), limits_(limits), closest_valid_(std::move(closest_valid)) {}

  GreenContextErrc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  /// The device's limits, where they were read before the failure (device == -1 otherwise).
  const GreenContextLimits& limits() const noexcept { return limits_; }
  /// For a split rejected by the GPU's limits: the nearest SM counts it accepts; empty otherwise.
  const std::vector<unsigned>& closest_valid() const noexcept { return closest_valid_; }

 private:
  GreenContextErrc code_;
  std::string message_;
  GreenContextLimits limits_;
  std::vector<unsigned> closest_valid_;
};

/// A value, or the GreenContextError that explains why there is none.
template <typename T>
class [[nodiscard]] GreenContextResult {
 public:
  GreenContextResult(T value) : state_(std::in_place_index<0>, std::move(value)) {}                // NOLINT: implicit
  GreenContextResult(GreenContextError error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  /// The value; calling these on an error is a precondition violation (std::bad_variant_access).
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  /// The error; calling this on a value is a precondition violation (std::bad_variant_access).
  const GreenContextError& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, GreenContextError> state_;
};

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
  /// higher, clamped by the driver to the device's range. kInvalidState when empty.
  GreenContextResult<cudaStream_t> make_stream(int priority = 0);

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
/// first use). kInvalidArgument for a bad device index; kNoDevice without a GPU.
GreenContextResult<GreenContextLimits> green_context_limits(int device);

/// Splits `device`'s SMs, in one driver call, into disjoint partitions of `sm_counts` SMs each (in
/// that order), then, with Remainder::kKeep, one of the SMs left over. Each partition comes with
/// one stream. Partitions never share an SM.
///
/// Each count must be a multiple of limits().granularity and together at most
/// limits().max_partitioned_sms; otherwise kInvalidArgument, whose message names the limits and
/// whose closest_valid() is the nearest request the GPU accepts (e.g. {30} -> {32}). Also
/// kInvalidArgument: no counts, a count of 0, a remainder where no SM is left.
GreenContextResult<std::vector<GreenContext>> split_device(int device, const std::vector<unsigned>& sm_counts,
                                                           Remainder remainder = Remainder::kDrop);

}  // namespace torch_tensorrt::executorch_backend
