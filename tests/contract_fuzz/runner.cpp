#include "contract_fuzz/runner.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/shrink.h"
#include "contract_fuzz/trial.h"

#include <cuda_runtime_api.h>

namespace trtet_test::fuzz {
namespace {

std::mutex g_watchdog_mutex;
std::string g_watchdog_context;

std::string gib(std::uint64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return out.str();
}

std::vector<std::size_t> all_indices(std::size_t count) {
  std::vector<std::size_t> indices(count);
  for (std::size_t i = 0; i < count; ++i) indices[i] = i;
  return indices;
}

}  // namespace

void set_watchdog_context(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_watchdog_mutex);
  g_watchdog_context = text;
}

void start_watchdog(double seconds) {
  static std::once_flag once;
  std::call_once(once, [seconds] {
    std::thread([seconds] {
      while (true) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const long step = g_current_step.load();
        if (step < 0) continue;
        const auto started = std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(g_step_started_ns.load()));
        const double running = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (running < seconds || g_current_step.load() != step) continue;
        std::lock_guard<std::mutex> lock(g_watchdog_mutex);
        std::fprintf(stderr,
                     "contract-fuzz FAILURE [crash-or-hang]: step %ld has run for %.0f s (limit %.0f s): a call or a "
                     "destroy never returned\n%s\n",
                     step, running, seconds, g_watchdog_context.c_str());
        std::fflush(stderr);
        std::_Exit(kTrialExitBase + static_cast<int>(Category::kCrashOrHang));
      }
    }).detach();
  });
}

Runner::Runner(RunnerOptions options, std::ostream& out) : options_(std::move(options)), out_(out) {}

#if !TRTET_FUZZ_HAVE_EXECUTORCH
bool have_et_leg() noexcept { return false; }

RunResult run_et(const EtSequence&, const std::vector<std::size_t>&, Tally&) {
  RunResult result;
  result.failure = Failure{Category::kHarness, "this build has no executorch leg (ExecuTorch, flatc or its program.fbs "
                                               "was not found when it was configured)"};
  return result;
}
#endif

SeedOutcome Runner::run(const FuzzConfig& given, const std::vector<std::size_t>* keep) {
  const FuzzConfig config = as_run_here(given);  // --no-green under initcheck
  // The leg's sequence, as text for the report, and how to run a selection of its steps.
  std::vector<std::string> texts;
  std::string slots;
  std::function<RunResult(const std::vector<std::size_t>&)> execute;
  if (config.leg == Leg::kExecuTorch) {
    auto sequence = std::make_shared<const EtSequence>(generate_et(config));
    for (const EtStep& step : sequence->steps) texts.push_back(to_string(step));
    slots = "modules:";
    for (std::size_t m = 0; m < sequence->modules.size(); ++m) {
      slots += " m" + std::to_string(m) + " = " + to_string(sequence->modules[m]) + " (" +
               program_file(sequence->modules[m]) + ");";
    }
    execute = [this, sequence](const std::vector<std::size_t>& steps) { return run_et(*sequence, steps, tally_); };
  } else {
    auto sequence = std::make_shared<const Sequence>(generate(config));
    for (const Step& step : sequence->steps) texts.push_back(to_string(step));
    slots = "sessions:";
    for (std::size_t s = 0; s < sequence->sessions.size(); ++s) {
      slots += " s" + std::to_string(s) + " = " + to_string(sequence->sessions[s]) + ";";
    }
    execute = [this, sequence](const std::vector<std::size_t>& steps) {
      Executor executor(*sequence, tally_);
      return executor.run(steps);
    };
  }
  std::vector<std::size_t> steps;
  for (std::size_t s : keep != nullptr ? *keep : all_indices(texts.size())) {
    if (s < texts.size() && (steps.empty() || s > steps.back())) steps.push_back(s);  // ascending, in range
  }
  set_watchdog_context("seed " + std::to_string(config.seed) + "; re-run: " + options_.self + " " +
                       to_string(config) + " --steps " + to_string(steps));
  SeedOutcome outcome;
  outcome.config = config;
  const auto start = std::chrono::steady_clock::now();
  outcome.result = execute(steps);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++seeds_.all;
  ++(config.leg == Leg::kExecuTorch ? seeds_.executorch : seeds_.session);
  seconds_ += outcome.seconds;
  graphs_.captured += outcome.result.graphs;
  graphs_.replays += outcome.result.replays;
  graphs_.retired += outcome.result.retired;
  if (options_.verbose) {
    out_ << "contract-fuzz " << to_string(config.leg) << " seed " << config.seed << ": "
         << (outcome.result.failure ? "FAILED" : "ok") << " in " << std::fixed << std::setprecision(2)
         << outcome.seconds << " s (" << steps.size() << " steps";
    if (config.leg == Leg::kSession) {
      out_ << ", " << outcome.result.graphs << " graphs, " << outcome.result.replays << " replays";
    }
    out_ << ")\n" << std::flush;
  }
  if (outcome.result.failure) {
    ++seeds_.failed;
    outcome.shrunk = steps;
    report(texts, slots, outcome, steps);
    // A sticky error (an illegal address, say) breaks the context for every later seed.
    const cudaError_t error = cudaDeviceSynchronize();
    if (error != cudaSuccess) {
      usable_ = false;
      out_ << "contract-fuzz: the CUDA context is broken after this failure (" << cudaGetErrorString(error)
           << "): no further seeds run in this process\n"
           << std::flush;
    }
  }
  return outcome;
}

void Runner::report(const std::vector<std::string>& texts, const std::string& slots, const SeedOutcome& outcome,
                    const std::vector<std::size_t>& ran) {
  const Failure& failure = *outcome.result.failure;
  const bool harness = failure.category == Category::kHarness;
  out_ << "contract-fuzz FAILURE [" << to_string(failure.category) << "] " << to_string(outcome.config.leg) << " leg, seed "
       << outcome.config.seed;
  if (!harness || outcome.result.step != 0 || !ran.empty()) out_ << " at step " << outcome.result.step;
  out_ << ":\n  " << failure.message << "\n  " << slots << "\n" << std::flush;

  std::vector<std::size_t> shortest = ran;
  // Only up to the failing step: what came after it never ran.
  while (!shortest.empty() && shortest.back() > outcome.result.step) shortest.pop_back();
  int trials = 0;
  std::string how = "not shrunk";
  if (options_.shrink && !options_.self.empty() && !harness && shortest.size() > 1) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(options_.shrink_seconds));
    const Category category = failure.category;
    auto still_fails = [&](const std::vector<std::size_t>& candidate) {
      const auto got = run_trial(options_.self, outcome.config, candidate, options_.trial_timeout_s);
      return got.has_value() && *got == category;
    };
    shortest = shrink_steps(shortest, still_fails, deadline, &trials);
    how = "shrunk in " + std::to_string(trials) + " trial runs";
  }
  out_ << "  shortest reproducing sequence (" << shortest.size() << " of " << texts.size() << " steps, " << how
       << "):\n";
  for (std::size_t index : shortest) out_ << "    [" << index << "] " << texts[index] << "\n";
  out_ << "  reproduce: " << (options_.self.empty() ? "contract_fuzz" : options_.self) << " " << to_string(outcome.config)
       << " --steps " << to_string(shortest) << "\n"
       << std::flush;
}

std::string Runner::summary() const {
  std::ostringstream out;
  out << "contract-fuzz summary: " << seeds_.all << " seeds, " << tally_.calls.load() << " calls made, "
      << tally_.tensors.load() << " tensors compared, " << tally_.bytes.load() << " bytes checked ("
      << gib(tally_.bytes.load()) << "), " << seeds_.failed << " failures; legs: " << seeds_.session << " session, "
      << seeds_.executorch << " executorch seeds; " << graphs_.captured << " graphs captured, " << graphs_.replays
      << " replays, " << graphs_.retired << " graphs retired; promises checked: " << tally_.busy_at_return.load()
      << " busy-at-return, " << tally_.idle_after_reject.load() << " idle-after-reject, " << tally_.sm_checks.load()
      << " SM, " << tally_.stream_checks.load() << " stream, " << tally_.behind_gate.load() << " behind-a-held-call; " << tally_.deferred.load() << " calls checked late; "
      << std::fixed << std::setprecision(1) << seconds_ << " s";
  return out.str();
}

}  // namespace trtet_test::fuzz
