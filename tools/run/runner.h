// trtet-run's measurements: a program loaded once through ExecuTorch's Module, called N times on a
// stream (a green-context partition's or a whole-GPU one), one call at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "run/io.h"
#include "run/options.h"
#include "run/stats.h"

namespace trtet_run {

/// One measured run.
struct Measurement {
  LatencyStats stats;
  /// SM ids the engine's kernels ran on (recorded by the engine); nullopt where it cannot tell.
  std::optional<std::vector<int>> engine_sms;
};

/// Reads `path` as an ExecuTorch program and verifies its whole flatbuffer (every offset and length
/// within the file), and that `method`'s delegates have every field ExecuTorch reads without a check,
/// with no GPU: kInvalidArgument naming what is wrong where it is not such a program.
/// Nothing of a program is read before it passes (ExecuTorch's default verification checks the
/// header only, and a damaged table then crashes the reads that follow; docs/SECURITY.md).
ex::Status verify_program(const std::string& path, const std::string& method);

class Runner {
 public:
  /// Loads `options.program`, its method, and its inputs and outputs (MethodIo). kInvalidArgument
  /// for a mismatch with the program; kInternal when ExecuTorch cannot load it.
  static ex::Result<std::unique_ptr<Runner>> load(const RunOptions& options);

  /// `warmup` calls, then `iterations` timed calls on `stream`, each under a CudaStreamGuard and
  /// followed by a synchronization of `stream` (host time of execute + sync).
  ex::Result<Measurement> measure(cudaStream_t stream, int iterations, int warmup);

  /// With --etdump: logs the GPU times still pending (the calls were waited for) and writes the
  /// ETDump to `path` (an existing file only with `overwrite`, never through a symbolic link).
  ex::Status write_etdump(const std::string& path, bool overwrite);

  /// Writes the last call's outputs to dir/output_<i>.npy.
  ex::Status save_outputs(const std::string& dir, cudaStream_t stream) const;

  const MethodIo& io() const noexcept { return *io_; }

 private:
  Runner() = default;
  ex::Status call(cudaStream_t stream);

  RunOptions options_;
  std::unique_ptr<Module> module_;     // declared before io_: the tensors it points at go first
  std::unique_ptr<MethodIo> io_;
  std::vector<::executorch::runtime::EValue> last_outputs_;
};

}  // namespace trtet_run
