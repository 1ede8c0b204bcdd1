// The exhaustive fault loop (docs/TESTING.md, "Faults"): a scenario (load, calls, destroy) run once
// with no fault, then once with the 1st fallible point failing, the 2nd, ... until a run reaches no
// armed point. After each faulted run: the failing step returned an error that names what failed,
// in bounded time; the steps before it were right; what the seam and the staging pools count as
// allocated is back where it was (and, on a GPU, the device's free memory); and the same scenario
// with no fault succeeds.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "faults/faults.h"

namespace trtet_faults {

/// What one run of a scenario did.
struct Outcome {
  bool ok = true;                  ///< every step did what it does with no fault
  std::string step;                ///< the first step that did not ("load", "call 2", ...)
  std::string message;             ///< its error as reported: ExecuTorch's code, the log, the status
  std::vector<std::string> wrong;  ///< steps that completed with a wrong result (never allowed)

  /// Records the first failing step (later ones are ignored: the run stops there).
  void fail(const std::string& at, const std::string& what) {
    if (!ok) return;
    ok = false;
    step = at;
    message = what;
  }
};

/// Load, calls and destroy, in full every time it is called.
using Scenario = std::function<Outcome()>;

/// What the loop compares before and after a run.
struct MemorySnapshot {
  long long device_live = 0;           ///< bytes the seam saw allocated and not freed (device, stream-ordered)
  long long pinned_live = 0;           ///< likewise, pinned host memory
  std::uint64_t device_pool_used = 0;  ///< the shared device staging pool's used bytes
  std::uint64_t pinned_pool_used = 0;  ///< the shared pinned staging pool's used bytes
  std::size_t device_free = 0;         ///< cudaMemGetInfo's free bytes (GPU runs, after a trim)
};

/// The snapshot now; with `gpu`, after synchronizing the device and trimming the staging pools.
MemorySnapshot snapshot(bool gpu);

struct LoopOptions {
  bool gpu = false;                      ///< compare device memory and pool counters too
  unsigned long max_n = 5000;            ///< a bound on N (a loop that reaches it fails)
  double bound_s = 60;                   ///< a faulted run longer than this fails (no hang)
  long long device_free_slack = 0;       ///< device free memory may be this many bytes lower
};

/// One row of the table: a shape and path, the points its fault-free run reached, the N tried,
/// the runs that passed every check (those whose fault the runtime absorbed, outputs right, too).
struct LoopRow {
  std::string shape;
  std::string path;
  unsigned long points = 0;
  unsigned long tried = 0;
  unsigned long survived = 0;
  unsigned long absorbed = 0;
  std::set<std::string> calls;        ///< the names of the points reached
  std::vector<std::string> failures;  ///< "N=.. call: what went wrong"
};

/// Runs the loop over `scenario`; never stops at a failure (every N is tried).
LoopRow run_loop(const std::string& shape, const std::string& path, const Scenario& scenario,
                 const LoopOptions& options);

/// The table (shape, path, points, N tried, survived, absorbed, calls) and the totals, on stdout.
void print_table(const std::vector<LoopRow>& rows, const char* title);

/// Whether `message` names the failure of point `fired` injected with its kind's error.
bool names_failure(const std::string& message, const std::string& fired);

}  // namespace trtet_faults
