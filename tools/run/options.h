// trtet-run's command line (parsed with CLI11): what to load, where to run it, what to measure.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace trtet_run {

namespace ex = torch_tensorrt::executorch_backend;

/// Where the runner's own input and output buffers live (memory-planned I/O stays where the
/// program planned it: host memory).
enum class IoMemory { kDevice, kPinned, kHost };
const char* to_string(IoMemory memory);

struct RunOptions {
  std::string program;              ///< the .pte file
  std::string method = "forward";
  int device = 0;
  unsigned sms = 0;                 ///< a green-context partition of this many SMs; 0: the whole GPU
  int iterations = 1000;
  int warmup = 50;
  IoMemory io = IoMemory::kDevice;
  std::vector<std::string> inputs;  ///< .npy files, one per input, in order; empty: random
  std::vector<std::string> shapes;  ///< DIMS ("64x4096") for random inputs: one for all, or one per input
  unsigned seed = 1;
  std::string save_outputs;         ///< a folder for output_<i>.npy of the last call
  bool overwrite = false;           ///< replace existing output files (never through a symbolic link)
  bool compare = false;             ///< alone vs. beside a load on the remaining SMs, and on the whole GPU
  int load_us = 1000;               ///< each load kernel's duration
  std::string sweep;                ///< FIRST:LAST:STEP
  std::vector<unsigned> sweep_counts;
  double p99_target_us = 0;         ///< 0: none
  std::string csv;                  ///< the sweep's curve as CSV
  bool test_engines = false;        ///< build engines with the project's test-engine factory
  std::string etdump;               ///< ETDumpGen attached to the method, its ETDump written here
};

/// What parse_options decided: run, or exit with `exit_code` after printing `message`
/// (help text to stdout with 0; an error to stderr otherwise).
struct ParseOutcome {
  bool run = false;
  int exit_code = 0;
  std::string message;
  RunOptions options;
};

/// Exit statuses of trtet-run.
enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,         ///< bad arguments, or a partition the GPU cannot make
  kExitNoGpu = 2,
  kExitFailed = 3,        ///< the program failed to load or run
  kExitTargetMissed = 4,  ///< --p99-target-us: no partition (or the run) met it
};

/// Parses trtet-run's arguments. `have_test_engines`: whether --test-engines is available in this build.
ParseOutcome parse_options(int argc, const char* const* argv, bool have_test_engines);

/// "64x4096" -> {64, 4096}; kInvalidArgument otherwise, and for a dimension past ExecuTorch's
/// (2147483647) or a shape whose element count overflows 64 bits.
ex::Result<std::vector<long long>> parse_dims(const std::string& text);

}  // namespace trtet_run
