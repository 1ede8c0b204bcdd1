// Auxiliary streams for engines that run work in parallel, made where the caller's stream
// lives (its green context, else its device), so no engine kernel escapes the partition.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <vector>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::delegate {

class AuxStreams {
 public:
  AuxStreams() = default;
  ~AuxStreams();
  AuxStreams(const AuxStreams&) = delete;             // owns streams
  AuxStreams& operator=(const AuxStreams&) = delete;

  /// `count` streams on `green` (or, when null, ordinary non-blocking streams on the current
  /// device), made on first use and cached. The pointer stays valid until the next call.
  Result<cudaStream_t*> get(CUgreenCtx green, int count);

  /// Destroys every cached stream (no-throw). Streams release their resources once their work is done.
  void reset() noexcept;

 private:
  struct Set {
    CUgreenCtx green;
    std::vector<cudaStream_t> streams;
  };
  std::vector<Set> sets_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
