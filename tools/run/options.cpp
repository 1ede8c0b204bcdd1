#include "run/options.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <sstream>

#include "common/escape.h"
#include "engine/types.h"
#include "run/stats.h"

namespace trtet_run {
namespace {

constexpr char kDescription[] =
    "trtet-run: loads an ExecuTorch program (.pte) with ExecuTorch's Module, fills its inputs (random by\n"
    "dtype and shape, or from .npy files), runs it N times on a green-context partition of the GPU (--sms)\n"
    "or on the whole GPU, and prints p50/p90/p99/max latency (host time of execute + stream sync per\n"
    "call), throughput, and the SMs the GPU work ran on where the engine records them.\n"
    "\n"
    "  trtet-run model.pte --sms 32                       # a 32-SM partition\n"
    "  trtet-run model.pte --sms 32 --compare             # alone vs. beside a load on the other SMs\n"
    "  trtet-run model.pte --sweep-sms 8:132:8 --p99-target-us 200 --csv sweep.csv\n"
    "                                                     # the smallest partition meeting a p99 target\n"
    "  trtet-run model.pte --sms 32 --etdump run.etdp     # profile: tools/etdump_report.py run.etdp\n"
    "\n"
    "Exit status: 0 ok; 1 bad arguments or a partition the GPU cannot make; 2 no GPU; 3 the program\n"
    "failed to load or run; 4 --p99-target-us not met.\n";

/// The largest dimension an ExecuTorch tensor takes (its SizesType is int32_t).
constexpr long long kMaxDim = 2147483647;

ParseOutcome usage_error(const std::string& message) {
  ParseOutcome outcome;
  outcome.exit_code = kExitUsage;
  outcome.message = "trtet-run: " + message + " (see --help)\n";
  return outcome;
}

}  // namespace

const char* to_string(IoMemory memory) {
  switch (memory) {
    case IoMemory::kDevice:
      return "device";
    case IoMemory::kPinned:
      return "pinned host";
    case IoMemory::kHost:
      return "host";
  }
  return "?";
}

ex::Result<std::vector<long long>> parse_dims(const std::string& text) {
  std::vector<long long> dims;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    const std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    long long value = -1;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    TRTET_CHECK_OR_RETURN(!part.empty() && error == std::errc() && end == part.data() + part.size() && value >= 0,
                          kInvalidArgument, "a shape is written DIMxDIMx..., e.g. 64x4096; got '%s'",
                          ex::escape_for_message(text, 64).c_str());
    TRTET_CHECK_OR_RETURN(value <= kMaxDim, kInvalidArgument,
                          "shape '%s': dimension %lld is more than ExecuTorch's largest, %lld",
                          ex::escape_for_message(text, 64).c_str(), value, kMaxDim);
    dims.push_back(value);
    if (x == std::string::npos) {
      const std::vector<std::int64_t> checked(dims.begin(), dims.end());
      TRTET_CHECK_OR_RETURN(ex::checked_element_count(checked.data(), checked.size()).has_value(), kInvalidArgument,
                            "shape '%s' has more elements than fit in 64 bits", ex::escape_for_message(text, 64).c_str());
      return dims;
    }
    start = x + 1;
  }
}

ParseOutcome parse_options(int argc, const char* const* argv, bool have_test_engines) {
  RunOptions o;
  std::string io = "device";
  CLI::App app(kDescription, "trtet-run");
  app.get_formatter()->column_width(34);
  app.add_option("program", o.program, "the ExecuTorch program (.pte) to run")->required()->check(CLI::ExistingFile);
  app.add_option("--method", o.method, "the method to run")->capture_default_str();
  app.add_option("--device", o.device, "the CUDA device")->capture_default_str()->check(CLI::Range(0, 1023));
  auto* sms = app.add_option("--sms", o.sms,
                             "run on a green-context partition of this many SMs (a multiple of the GPU's "
                             "granularity: 8 on the H200); without it, the whole GPU")
                  ->check(CLI::Range(1u, 1u << 16));
  app.add_option("-n,--iterations", o.iterations, "measured calls")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app.add_option("--warmup", o.warmup, "calls before measuring")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--io", io, "where the runner's input and output buffers live (memory-planned I/O stays in "
                             "the program's host memory)")
      ->capture_default_str()
      ->check(CLI::IsMember({"device", "pinned", "host"}));
  app.add_option("--input", o.inputs, "an input as a .npy file, one per input in order (repeat the option)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingFile);
  app.add_option("--shape", o.shapes,
                 "the shape of random inputs, e.g. 64x4096: once for every input or once per input "
                 "(default: the program's shape)")
      ->allow_extra_args(false);
  app.add_option("--seed", o.seed, "seed of the random inputs")->capture_default_str();
  auto* save = app.add_option("--save-outputs", o.save_outputs, "write the last call's outputs to DIR/output_<i>.npy")
                   ->check(CLI::ExistingDirectory);
  app.add_flag("--overwrite", o.overwrite,
               "replace existing files (--save-outputs, --csv); without it trtet-run refuses to, and it never writes "
               "through a symbolic link");
  auto* compare = app.add_flag("--compare", o.compare,
                               "run alone and beside a load on the remaining SMs, and the same on the whole GPU, "
                               "side by side (needs --sms)");
  app.add_option("--load-us", o.load_us, "duration of each load kernel (--compare)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  auto* sweep = app.add_option("--sweep-sms", o.sweep,
                               "measure on partitions of FIRST:LAST:STEP SMs (and the whole GPU), e.g. 8:132:8");
  app.add_option("--p99-target-us", o.p99_target_us,
                 "the latency target: with --sweep-sms, recommend the smallest partition whose p99 meets it")
      ->check(CLI::Range(0.001, 1e9));
  auto* csv = app.add_option("--csv", o.csv, "write the sweep's curve as CSV (plot it with tools/plot_sweep.py)");
  auto* etdump = app.add_option("--etdump", o.etdump,
                                "attach ExecuTorch's ETDumpGen to the method and write the ETDump of every call "
                                "(warm-up included) to FILE: each delegate call's host time and its engine's GPU "
                                "time; read it with tools/etdump_report.py FILE");
  auto* test = app.add_flag("--test-engines", o.test_engines,
                            "build engines with the project's test-engine factory (the engine bytes of the "
                            "programs tests/ generates are test-engine specs)");
  compare->needs(sms);
  compare->excludes(sweep);
  sweep->excludes(sms);
  csv->needs(sweep);
  save->excludes(compare);
  save->excludes(sweep);
  etdump->excludes(compare);
  etdump->excludes(sweep);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    ParseOutcome outcome;
    outcome.exit_code = code == 0 ? kExitOk : kExitUsage;
    outcome.message = code == 0 ? out.str() : "trtet-run: " + err.str();
    return outcome;
  }
  (void)test;
  if (o.test_engines && !have_test_engines) {
    return usage_error("--test-engines: this build has no test engines (configure with TRTET_BUILD_TESTS=ON)");
  }
  o.io = io == "device" ? IoMemory::kDevice : io == "pinned" ? IoMemory::kPinned : IoMemory::kHost;
  if (!o.inputs.empty() && !o.shapes.empty()) return usage_error("--shape applies to random inputs, not to --input files");
  for (const std::string& shape : o.shapes) {
    auto dims = parse_dims(shape);
    if (!dims.ok()) return usage_error("--shape: " + dims.status().message());
  }
  if (!o.sweep.empty()) {
    auto counts = parse_sm_range(o.sweep);
    if (!counts.ok()) return usage_error(counts.status().message());
    o.sweep_counts = std::move(counts).value();
  }
  ParseOutcome outcome;
  outcome.run = true;
  outcome.options = std::move(o);
  return outcome;
}

}  // namespace trtet_run
