// The one error vocabulary of the public API: ErrorCode, Error (also named Status) and Result<T>.
//
// Every public function that can fail returns an Error (Status) or a Result<T>, and the library's
// internals use the same types (src/common/status.h adds only helpers), so a code means the same
// thing wherever it comes from. Nothing throws. At ExecuTorch's boundary (TensorRTBackend's init
// and execute) each code becomes one executorch::runtime::Error, listed beside it below.
//
//   auto partitions = split_device(0, {30});                  // Result<std::vector<GreenContext>>
//   if (!partitions.ok()) {
//     const Error& e = partitions.error();
//     if (e.code() == ErrorCode::kInvalidArgument) puts(e.message().c_str());  // what the GPU allows
//     // e.closest_valid() == {32}: the nearest request the GPU accepts
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace torch_tensorrt::executorch_backend {

/// What went wrong, grouped by meaning, so the caller learns what to do rather than where it
/// failed (docs/DESIGN.md, "Errors"). The ExecuTorch error each becomes at init/execute is in [].
enum class ErrorCode : std::uint8_t {
  kOk = 0,                  ///< no error [Ok]
  kInvalidArgument,         ///< caller misuse: a wrong stream device, argument count, shape or dtype,
                            ///< a request the GPU cannot satisfy [InvalidArgument]
  kInvalidProgram,          ///< a bad blob, compile spec or engine metadata [InvalidProgram]
  kInternal,                ///< a CUDA or engine failure at run time [Internal]
  kIncompatible,            ///< a version or platform mismatch [DelegateInvalidCompatibility]
  kNotSupported,            ///< a valid request this build or device cannot serve [NotSupported]
  kNotFound,                ///< a named thing (binding, backend, symbol) is absent [NotFound]
  kMemoryAllocationFailed,  ///< host or device allocation failed [DelegateMemoryAllocationFailed at
                            ///< init, MemoryAllocationFailed at execute]
  kNoDevice,                ///< no usable CUDA device or driver [AccessFailed]
  kInvalidState,            ///< the object cannot take this call now (empty, destroyed) [InvalidState]
};

/// A short stable name for `code`, e.g. "InvalidArgument" ("Unknown" for a value not listed).
const char* to_string(ErrorCode code) noexcept;

/// What a GPU allows when its SMs are split into green contexts (the driver's SM resource): the
/// details a rejected split carries on its Error (Error::limits()), and what
/// green_context_limits() returns (GreenContext.h). On the H200: 132 SMs, minimum partition 8,
/// alignment 8, so partitions are multiples of 8 SMs; one split hands out as many whole 8-SM
/// groups as the chip's GPCs hold (15 groups, 120 of the 132 SMs, on the H200 here), and the rest
/// forms the remainder. The count depends on the chip, so read it (docs/PLANNING.md).
struct GreenContextLimits {
  int device = -1;                   ///< -1: no limits were read
  unsigned sm_count = 0;             ///< SMs of the device
  unsigned min_partition = 0;        ///< the smallest partition the driver makes
  unsigned alignment = 0;            ///< partition sizes are multiples of this
  unsigned granularity = 0;          ///< every partition is a multiple of this: min_partition rounded up to alignment
  unsigned max_partitioned_sms = 0;  ///< the most SMs one split hands out to requested partitions
};

/// The outcome of a call: Ok, or a code with a message that says what was expected and what was
/// found. Only a split or plan refused for the GPU's limits (kInvalidArgument) carries split
/// details as well: the device's limits and the closest request it accepts, behind one shared
/// pointer. Every other error, and Ok, carries none and is a code and a string.
class [[nodiscard]] Error {
 public:
  /// Ok.
  Error() noexcept = default;
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  /// An error with the split details: `limits` (device -1 when none were read) and the nearest SM
  /// counts the GPU accepts (empty when there are none to offer). The details are kept only with
  /// kInvalidArgument, the code of a request the GPU refuses; with any other code they are dropped.
  Error(ErrorCode code, std::string message, GreenContextLimits limits, std::vector<unsigned> closest_valid = {});

  static Error Ok() noexcept { return Error(); }

  bool ok() const noexcept { return code_ == ErrorCode::kOk; }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  /// "<CodeName>: <message>", or "Ok".
  std::string to_string() const;

  /// Whether this error carries split details (a kInvalidArgument split or plan refusal).
  bool has_split_details() const noexcept { return split_ != nullptr; }
  /// For a split or plan the GPU refuses: that device's green-context limits. device == -1 for
  /// every other error, and where the limits could not be read.
  const GreenContextLimits& limits() const noexcept;
  /// For a split the GPU's limits refuse: the nearest SM counts it accepts; empty otherwise.
  const std::vector<unsigned>& closest_valid() const noexcept;

 private:
  struct SplitDetails;  // defined by the library; null for every error without them
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::shared_ptr<const SplitDetails> split_;
};

/// The same type, by the name used where a call returns no value (Status::Ok() or an error).
using Status = Error;

/// A value, or the Error that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  /// An error; an Ok Error without a value becomes kInternal (a bug in the callee, reported as one).
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {  // NOLINT: implicit by design
    if (std::get<1>(state_).ok()) {
      state_.template emplace<1>(ErrorCode::kInternal, "Result built from an Ok status without a value");
    }
  }

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  /// The error; an Ok Error when a value is held.
  const Error& error() const noexcept {
    static const Error kNone;
    return ok() ? kNone : std::get<1>(state_);
  }
  /// A copy of error() (the name the library's internals use).
  Error status() const { return error(); }

  /// The value; calling these on an error is a precondition violation (std::bad_variant_access).
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace torch_tensorrt::executorch_backend
