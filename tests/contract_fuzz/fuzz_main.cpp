// contract_fuzz: the GPU seed set as a gtest binary (no arguments, or gtest's), or standalone:
//   --soak MINUTES             random seeds for that long, then the summary line; the legs alternate
//                              (seed by seed) unless --leg names one
//   --seed N [--steps LIST]    one seed (only the listed steps), with its report and the summary line
//   --leg session|executorch   which runtime the sequences drive: the delegate's Session (default for
//                              --seed), or ExecuTorch's Module over generated .pte programs
//   --print                    with --seed: print the sequence and exit (no GPU needed)
//   --length L --max-bytes B --concurrent-max-bytes B --max-spin-us U   the draw (defaults: the seed set's)
//   --no-green                 no green-context streams drawn (FuzzConfig::green); always so under
//                              initcheck (TRTET_SANITIZER_TOOL=initcheck), which says so once on stderr
//   --trial                    a shrink trial: quiet, exit status 10 + failure category, 0 if it passed
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "contract_fuzz/et_executor.h"
#include "contract_fuzz/et_sequence.h"
#include "contract_fuzz/generator.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/rng.h"
#include "contract_fuzz/runner.h"
#include "contract_fuzz/self_path.h"
#include "contract_fuzz/trial.h"

namespace fuzz = trtet_test::fuzz;

namespace {

struct Options {
  std::optional<double> soak_minutes;
  std::optional<std::uint64_t> seed;
  std::optional<std::vector<std::size_t>> steps;
  bool trial = false;
  bool print = false;
  std::optional<fuzz::Leg> leg;
  fuzz::FuzzConfig config;
  bool length_given = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "contract_fuzz: " << problem
            << "\nusage: contract_fuzz [gtest flags] | --soak MINUTES | --seed N [--steps 1,5,9] [--print] [--trial]"
               " [--leg session|executorch] [--length L] [--max-bytes B] [--concurrent-max-bytes B] [--max-spin-us U]"
               " [--no-green]\n";
  std::exit(2);
}

std::uint64_t number(const char* text, const char* flag) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') usage(std::string("bad number for ") + flag + ": " + text);
  return value;
}

std::vector<std::size_t> index_list(const char* text) {
  std::vector<std::size_t> list;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) list.push_back(static_cast<std::size_t>(number(item.c_str(), "--steps")));
  }
  return list;
}

/// True when argv holds a standalone flag; fills `options`.
bool parse(int argc, char** argv, Options& options) {
  bool standalone = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--soak") {
      char* end = nullptr;
      const char* text = value();
      options.soak_minutes = std::strtod(text, &end);
      if (end == text || *end != '\0' || *options.soak_minutes <= 0) usage(std::string("bad --soak minutes: ") + text);
      standalone = true;
    } else if (arg == "--seed") {
      options.seed = number(value(), "--seed");
      standalone = true;
    } else if (arg == "--steps") {
      options.steps = index_list(value());
    } else if (arg == "--leg") {
      const std::string leg = value();
      if (leg == "session") {
        options.leg = fuzz::Leg::kSession;
      } else if (leg == "executorch") {
        options.leg = fuzz::Leg::kExecuTorch;
      } else {
        usage("--leg takes session or executorch, not " + leg);
      }
    } else if (arg == "--trial") {
      options.trial = true;
    } else if (arg == "--print") {
      options.print = true;
    } else if (arg == "--length") {
      options.config.length = static_cast<int>(number(value(), "--length"));
      options.length_given = true;
    } else if (arg == "--max-bytes") {
      options.config.max_bytes = number(value(), "--max-bytes");
    } else if (arg == "--concurrent-max-bytes") {
      options.config.concurrent_max_bytes = number(value(), "--concurrent-max-bytes");
    } else if (arg == "--max-spin-us") {
      options.config.max_spin_us = static_cast<std::int64_t>(number(value(), "--max-spin-us"));
    } else if (arg == "--no-green") {
      options.config.green = false;
    } else if (arg.rfind("--gtest", 0) != 0 && standalone) {
      usage("unknown argument " + arg);
    }
  }
  if ((options.trial || options.steps || options.print) && !options.seed) usage("--trial, --steps and --print need --seed");
  if (options.soak_minutes && options.seed) usage("--soak and --seed exclude each other");
  return standalone;
}

/// --print: the sequence of `config`, its slots (sessions or modules) and steps, one a line.
template <class S>
int print_sequence(const fuzz::FuzzConfig& config, const S& sequence, const char* slots,
                   const std::vector<std::string>& slot_texts) {
  std::cout << "seed " << config.seed << " (" << fuzz::to_string(config) << ")\n" << slots << ":";
  for (std::size_t i = 0; i < slot_texts.size(); ++i) std::cout << " " << slots[0] << i << " = " << slot_texts[i] << ";";
  std::cout << "\n";
  for (std::size_t i = 0; i < sequence.steps.size(); ++i) {
    std::cout << "[" << i << "] " << fuzz::to_string(sequence.steps[i]) << "\n";
  }
  return 0;
}

int standalone(const Options& options) {
  if (options.print) {
    fuzz::FuzzConfig config = fuzz::as_run_here(options.config);
    config.seed = *options.seed;
    std::vector<std::string> slots;
    if (options.leg == fuzz::Leg::kExecuTorch) {
      config.leg = fuzz::Leg::kExecuTorch;
      const fuzz::EtSequence sequence = fuzz::generate_et(config);
      for (fuzz::EtProgram program : sequence.modules) slots.push_back(fuzz::to_string(program));
      return print_sequence(config, sequence, "modules", slots);
    }
    const fuzz::Sequence sequence = fuzz::generate(config);
    for (const fuzz::EngineSpec& spec : sequence.sessions) slots.push_back(fuzz::to_string(spec));
    return print_sequence(config, sequence, "sessions", slots);
  }
  if (!trtet_test::no_gpu_reason().empty()) {
    std::cerr << "contract_fuzz: needs a GPU: " << trtet_test::no_gpu_reason() << "\n";
    return 1;
  }
  const bool sanitizer = trtet_test::under_sanitizer();
  fuzz::start_watchdog(sanitizer ? 1500 : 120);
  fuzz::RunnerOptions runner_options;
  runner_options.self = fuzz::self_path();
  runner_options.verbose = options.seed.has_value() && !options.trial;  // a soak prints a line a minute
  runner_options.shrink = !options.trial && !sanitizer;
  std::ostringstream quiet;
  fuzz::Runner runner(runner_options, options.trial ? static_cast<std::ostream&>(quiet) : std::cout);

  if (options.leg == fuzz::Leg::kExecuTorch && !fuzz::have_et_leg()) {
    std::cerr << "contract_fuzz: this build has no executorch leg (ExecuTorch, flatc or program.fbs was not found)\n";
    return 1;
  }
  if (options.seed) {
    fuzz::FuzzConfig config = options.config;
    config.seed = *options.seed;
    config.leg = options.leg.value_or(fuzz::Leg::kSession);
    const fuzz::SeedOutcome outcome = runner.run(config, options.steps ? &*options.steps : nullptr);
    if (options.trial) {
      return outcome.result.failure ? fuzz::kTrialExitBase + static_cast<int>(outcome.result.failure->category) : 0;
    }
    std::cout << runner.summary() << std::endl;
    return runner.failures() == 0 ? 0 : 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(*options.soak_minutes * 60.0);
  fuzz::Rng seeds((std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}());
  auto next_report = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  std::uint64_t round = 0;
  while (std::chrono::steady_clock::now() < end) {
    fuzz::FuzzConfig config = options.config;
    config.seed = seeds.next() >> 1;  // printable as a positive number everywhere
    // Without --leg: session and executorch seeds in turn (session only where the build has no
    // executorch leg).
    config.leg = options.leg.value_or(fuzz::have_et_leg() && round++ % 2 == 1 ? fuzz::Leg::kExecuTorch
                                                                              : fuzz::Leg::kSession);
    if (!options.length_given) config.length = 20 + static_cast<int>(fuzz::mix(config.seed, 7) % 41);
    runner.run(config);
    if (!runner.usable()) break;
    if (std::chrono::steady_clock::now() >= next_report) {
      std::cout << "(so far) " << runner.summary() << std::endl;
      next_report += std::chrono::minutes(1);
    }
  }
  std::cout << runner.summary() << std::endl;
  return runner.failures() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (parse(argc, argv, options)) return standalone(options);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
