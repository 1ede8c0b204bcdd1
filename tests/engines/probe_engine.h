// The elementwise engine (out = a*x + b*y) with a probe: it can be told to throw from one of its
// methods, as an engine behind a custom factory might, and it counts what it saw.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "engines/elementwise_engine.h"

namespace trtet_test {

class ProbeEngine : public ElementwiseEngine {
 public:
  /// Where the engine throws (std::runtime_error with kThrowMessage), if anywhere.
  enum class Throw { kNever, kSetInputShape, kInferShapes, kEnqueue };
  static constexpr const char* kThrowMessage = "probe engine: thrown on purpose";

  static Result<std::unique_ptr<ProbeEngine>> create(int device, const Shape& min_shape, const Shape& max_shape,
                                                     const KernelOptions& options = {});

  Status set_input_shape(int index, const Shape& shape) override;
  Result<int> infer_shapes() override;
  Status enqueue(cudaStream_t stream) override;

  /// Set by the test between calls.
  std::atomic<Throw> throw_in{Throw::kNever};
  /// How many times the engine threw.
  std::atomic<int> throws{0};

 private:
  using ElementwiseEngine::ElementwiseEngine;
  void maybe_throw(Throw where);
};

/// The places the engine can throw from, in the order the bug-7 tests instantiate them.
inline constexpr ProbeEngine::Throw kThrowSites[] = {ProbeEngine::Throw::kSetInputShape,
                                                     ProbeEngine::Throw::kInferShapes, ProbeEngine::Throw::kEnqueue};
/// "SetInputShape", "InferShapes", "Enqueue" or "Never": a test-parameter name.
const char* to_string(ProbeEngine::Throw where);

/// Runs `call`; what it let escape as an exception (its what(), or a note for a non-standard one),
/// or nothing when it returned normally.
template <typename Fn>
std::optional<std::string> escaped_exception(Fn&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return std::string(e.what());
  } catch (...) {
    return std::string("(not a std::exception)");
  }
  return std::nullopt;
}

}  // namespace trtet_test
