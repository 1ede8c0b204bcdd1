// Runs seeds: generates each sequence, executes it, shrinks a failure (in trial processes) and
// prints it with its seed, the shortest reproducing steps and the command that re-runs them; keeps
// the totals for the summary line.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "contract_fuzz/executor.h"
#include "contract_fuzz/oracle.h"
#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

struct RunnerOptions {
  bool shrink = true;             ///< shrink failures (needs `self`)
  double shrink_seconds = 90;     ///< per failure
  double trial_timeout_s = 120;   ///< per shrink trial
  std::string self;               ///< this binary, for trials and the reproduce line
  bool verbose = false;           ///< a line per seed
};

struct SeedOutcome {
  FuzzConfig config;
  RunResult result;
  double seconds = 0;
  std::vector<std::size_t> shrunk;  ///< the failing steps kept (empty when it passed)
};

class Runner {
 public:
  Runner(RunnerOptions options, std::ostream& out);

  /// Runs `config`'s sequence of config.leg's kind (only steps `keep` when given). A failure is
  /// printed, shrunk first.
  SeedOutcome run(const FuzzConfig& config, const std::vector<std::size_t>* keep = nullptr);

  /// "contract-fuzz summary: <n> seeds, <calls> calls made, <tensors> tensors compared, <bytes>
  /// bytes checked, <failures> failures; legs: <s> session, <e> executorch seeds; ...; promises
  /// checked: <b> busy-at-return, <i> idle-after-reject, <m> SM, <t> stream, <h> behind-a-held-call;
  /// <d> calls checked late; <s> s"
  std::string summary() const;
  std::uint64_t failures() const noexcept { return seeds_.failed; }
  /// False once a failure left the CUDA context broken (a sticky error): later seeds cannot run.
  bool usable() const noexcept { return usable_; }
  const Tally& tally() const noexcept { return tally_; }

 private:
  /// `texts`: every step of the sequence as text; `slots`: its sessions or modules, as one line.
  void report(const std::vector<std::string>& texts, const std::string& slots, const SeedOutcome& outcome,
              const std::vector<std::size_t>& ran);

  /// Seeds run, by leg, and their failures.
  struct Seeds {
    std::uint64_t all = 0, session = 0, executorch = 0, failed = 0;
  };
  /// The session leg's graphs: captured, replayed, dropped with their session.
  struct Graphs {
    std::uint64_t captured = 0, replays = 0, retired = 0;
  };

  RunnerOptions options_;
  std::ostream& out_;
  Tally tally_;
  Seeds seeds_;
  Graphs graphs_;
  double seconds_ = 0;
  bool usable_ = true;
};

/// Starts (once) a thread that ends the process when a step runs longer than `seconds`, printing
/// the step, the seed being run and how to re-run it. Exit status kTrialExitBase + kCrashOrHang.
void start_watchdog(double seconds);
/// What the watchdog prints for the current seed.
void set_watchdog_context(const std::string& text);

}  // namespace trtet_test::fuzz
