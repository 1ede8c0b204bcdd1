// What every sequence of a process shares: the green-context split of device 0 (a 16-SM
// partition and the rest) and one non-blocking I/O stream per fuzzer thread, used to write inputs
// and read results without synchronizing any stream the delegate works on. Under initcheck
// (TRTET_SANITIZER_TOOL=initcheck) there is no split: sequences are drawn without green contexts.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "common/status.h"
#include "contract_fuzz/gate.h"
#include "contract_fuzz/sequence.h"
#include "green/split.h"

namespace trtet_test::fuzz {

namespace ex = torch_tensorrt::executorch_backend;

/// Fuzzer threads: the main thread (0) and up to 4 workers of a concurrent step (1..4).
constexpr int kIoStreams = 5;
/// How long a closed gate holds its stream at most: a call that waits for its stream returns after
/// it. Under compute-sanitizer (calls 10-100x slower) kSanitizerGateTimeoutMs.
constexpr int kGateTimeoutMs = 1000;
constexpr int kSanitizerGateTimeoutMs = 30000;
/// How long a call queued behind a held gate is watched: it must not complete (its own work takes
/// a few milliseconds at most, so a call that did not wait for the held one completes well within).
constexpr int kBehindGateMs = 50;

/// False where this process makes no green contexts: under compute-sanitizer's initcheck
/// (trtet_test::green_contexts_unsupported_here()), whose process dies at the first green-context
/// launch. The first call that returns false says so on stderr.
bool green_contexts_here();

/// `config` as this process runs it: with green = false where !green_contexts_here() (no green-
/// context streams drawn, FuzzConfig::green); otherwise unchanged.
FuzzConfig as_run_here(FuzzConfig config);

/// Why a sequence drawn with green contexts cannot run in a process that makes none (both legs).
inline constexpr const char* kGreenDrawnWhereNone =
    "the sequence was drawn with green contexts, which this process makes none of "
    "(TRTET_SANITIZER_TOOL=initcheck): draw it with --no-green";

class GpuWorld {
 public:
  /// Made on first use (split_device, streams); status() says why not where that failed.
  static GpuWorld& get();

  const ex::Status& status() const noexcept { return status_; }
  /// False where green_contexts_here() is: no split was made and partition() must not be called.
  bool has_green() const noexcept { return !partitions_.empty(); }
  /// Partition 0: 16 SMs; partition 1: the remainder.
  ex::green::Partition& partition(int index) { return partitions_[static_cast<std::size_t>(index)]; }
  /// The SM ids (sorted) a saturating kernel on partition `index` ran on (green/probe.h).
  const std::vector<int>& partition_sms(int index) const { return sms_[static_cast<std::size_t>(index)]; }
  cudaStream_t io(int thread) const noexcept { return io_[thread]; }
  /// The main thread's gate (timeout kGateTimeoutMs, or kSanitizerGateTimeoutMs).
  Gate& gate() noexcept { return gate_; }

 private:
  GpuWorld();
  ex::Status status_;
  std::vector<ex::green::Partition> partitions_;
  std::vector<std::vector<int>> sms_;
  Gate gate_;
  cudaStream_t io_[kIoStreams] = {};
};

}  // namespace trtet_test::fuzz
