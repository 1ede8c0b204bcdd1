#include "plan/options.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "plan/plan_set_select.h"
#include "plan/rules.h"
#include "run/stats.h"

namespace trtet_plan {
namespace {

constexpr char kDescription[] =
    "trtet-plan: plans green-context partitions of one GPU for several models so that every model meets\n"
    "its p99 target (and minimum calls/s) beside the others, with the fewest SMs. It measures each model's\n"
    "latency alone on every partition size the GPU allows, searches the sizes (Note [plan search]),\n"
    "verifies the plan by running all models at once on their partitions (one thread and stream each),\n"
    "adjusts where a model misses beside the others, and writes the plan file that\n"
    "torch_tensorrt/executorch/PartitionPlan.h applies.\n"
    "\n"
    "  trtet-plan --model name=chat,program=chat.pte,p99_us=300,io=host \\\n"
    "             --model name=vision,program=vision.pte,p99_us=2000,calls_per_s=400 --out plan.json --csv run\n"
    "  tools/plot_plan.py run_curves.csv run_verify.csv plan.png\n"
    "\n"
    "--model keys: name, program, p99_us (required); calls_per_s (a minimum, one call at a time),\n"
    "io=device|pinned|host (default device), shape=DIMS (e.g. 64x4096; once for all inputs or once per\n"
    "input, repeated), method (default forward).\n"
    "\n"
    "Several GPUs: plan each device (--device D --out planD.json), then merge the plans into the one file\n"
    "that names each model's device and partition (apply_partition_plan, the Triton backend's plan_file):\n"
    "  trtet-plan --merge 0=plan0.json --merge 1=plan1.json --out plans.json\n"
    "\n"
    "Partitions that follow the load: --plan-set FILE writes a plan set (a few plans made up front, each\n"
    "model's curve on each) covering every mix of the models' expected rates, one --rate each:\n"
    "  trtet-plan --model name=chat,... --model name=vision,... --rate chat=500:4000 --rate vision=50:400 \\\n"
    "             --plans 4 --plan-set ladder.json\n"
    "\n"
    "Exit status: 0 a plan that meets every target beside the others; 1 bad arguments; 2 no GPU;\n"
    "3 a program failed to load or run, or a file could not be written; 4 no plan meets every target\n"
    "(the report says which model cannot be met and the best it can do).\n";

PlanParse usage_error(const std::string& message) {
  PlanParse outcome;
  outcome.exit_code = kPlanUsage;
  outcome.message = "trtet-plan: " + message + " (see --help)\n";
  return outcome;
}

ex::Status bad_model(const std::string& text, const std::string& why) {
  return ex::make_error(ex::ErrorCode::kInvalidArgument, "--model '%s': %s", text.c_str(), why.c_str());
}

bool parse_number(const std::string& text, double& value) {
  if (text.empty() || text.size() > 32) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}

bool valid_dims(const std::string& text) {
  if (text.empty() || text.size() > 128) return false;
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == 'x' && digit) {
      digit = false;
    } else {
      return false;
    }
  }
  return digit;
}

}  // namespace

const char* to_string(Io io) {
  switch (io) {
    case Io::kDevice:
      return "device";
    case Io::kPinned:
      return "pinned";
    case Io::kHost:
      return "host";
  }
  return "?";
}

bool valid_name(const std::string& name) { return ex::plan::valid_name(name); }

ex::Result<ModelSpec> parse_model_spec(const std::string& text) {
  ModelSpec spec;
  std::set<std::string> seen;
  std::size_t start = 0;
  if (text.empty()) return bad_model(text, "empty; expected name=NAME,program=FILE,p99_us=US[,...]");
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return bad_model(text, "expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key != "shape" && !seen.insert(key).second) return bad_model(text, "repeated key '" + key + "'");
    if (key == "name") {
      if (!valid_name(value)) return bad_model(text, "name must be 1 to 64 of A-Z a-z 0-9 _ . -, got '" + value + "'");
      spec.name = value;
    } else if (key == "program") {
      if (value.empty()) return bad_model(text, "program is empty");
      spec.program = value;
    } else if (key == "method") {
      if (value.empty()) return bad_model(text, "method is empty");
      spec.method = value;
    } else if (key == "p99_us") {
      if (!parse_number(value, spec.p99_target_us) || spec.p99_target_us <= 0 || spec.p99_target_us > 1e9) {
        return bad_model(text, "p99_us must be a number of microseconds in (0, 1e9], got '" + value + "'");
      }
    } else if (key == "calls_per_s") {
      if (!parse_number(value, spec.min_calls_per_s) || spec.min_calls_per_s < 0 || spec.min_calls_per_s > 1e9) {
        return bad_model(text, "calls_per_s must be a number in [0, 1e9], got '" + value + "'");
      }
    } else if (key == "io") {
      if (value == "device") {
        spec.io = Io::kDevice;
      } else if (value == "pinned") {
        spec.io = Io::kPinned;
      } else if (value == "host") {
        spec.io = Io::kHost;
      } else {
        return bad_model(text, "io takes device, pinned or host, got '" + value + "'");
      }
    } else if (key == "shape") {
      if (!valid_dims(value)) return bad_model(text, "shape is written DIMxDIMx..., e.g. 64x4096; got '" + value + "'");
      spec.shapes.push_back(value);
    } else {
      return bad_model(text, "unknown key '" + key + "' (keys: name, program, p99_us, calls_per_s, io, shape, method)");
    }
  }
  if (spec.name.empty()) return bad_model(text, "name= is required");
  if (spec.program.empty()) return bad_model(text, "program= is required");
  if (spec.p99_target_us <= 0) return bad_model(text, "p99_us= is required");
  return spec;
}

PlanParse parse_plan_options(int argc, const char* const* argv, bool have_test_engines) {
  PlanOptions o;
  std::vector<std::string> models;
  CLI::App app(kDescription, "trtet-plan");
  app.get_formatter()->column_width(30);
  std::vector<std::string> merges;
  app.add_option("-m,--model", models, "a model to plan (repeat): name=NAME,program=FILE,p99_us=US[,...]")
      ->allow_extra_args(false);
  app.add_option("--merge", merges, "DEVICE=FILE (repeat): merge plan files for any device into one plan that names "
                                    "each device (--out); plans nothing, needs no GPU")
      ->allow_extra_args(false);
  app.add_option("--device", o.device, "the CUDA device")->capture_default_str()->check(CLI::Range(0, 1023));
  app.add_option("-n,--iterations", o.iterations, "calls per measured point, and per model beside the others")
      ->capture_default_str()
      ->check(CLI::Range(10, 1 << 22));
  app.add_option("--warmup", o.warmup, "calls before measuring")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--sizes", o.sizes, "partition sizes to measure, FIRST:LAST:STEP (default: every size the GPU allows)");
  app.add_option("--rounds", o.rounds, "side-by-side verifications: the first and the adjustments after it")
      ->capture_default_str()
      ->check(CLI::Range(1, 32));
  app.add_flag("--spread", o.spread, "give the SMs the plan leaves over to the models with the least margin");
  app.add_option("--remainder", o.remainder, "name of the remainder partition in the plan (the SMs left over); "
                                              "'none' for no remainder partition")
      ->capture_default_str();
  app.add_flag("--load-remainder", o.load_remainder,
               "verify with an SM-flooding load on the remainder (what else may run there)");
  app.add_option("--load-us", o.load_us, "duration of each load kernel (--load-remainder)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("-o,--out", o.out, "the plan file to write")->capture_default_str();
  app.add_option("--csv", o.csv_prefix, "write PREFIX_curves.csv and PREFIX_verify.csv (tools/plot_plan.py)");
  std::vector<std::string> rates;
  app.add_option("--plan-set", o.plan_set_out, "write a plan set covering the --rate mixes to FILE (instead of --out)");
  app.add_option("--rate", rates, "MODEL=LOW:HIGH calls/s (repeat, one per model): the rates expected (--plan-set)")
      ->allow_extra_args(false);
  app.add_option("--plans", o.max_plans, "the most plans of the set (--plan-set)")->capture_default_str();
  app.add_option("--rate-levels", o.rate_levels, "rates sampled in each model's range (--plan-set)")
      ->capture_default_str();
  app.add_flag("--test-engines", o.test_engines,
               "build engines with the project's test-engine factory (the programs tests/ generates)");
  app.add_option("--exhaustive-limit", o.exhaustive_limit,
                 "combinations the exhaustive quality check may try (0: no check)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    PlanParse outcome;
    outcome.exit_code = code == 0 ? kPlanOk : kPlanUsage;
    outcome.message = code == 0 ? out.str() : "trtet-plan: " + err.str();
    return outcome;
  }
  if (o.plan_set_out.empty() && (!rates.empty() || app.count("--plans") || app.count("--rate-levels"))) {
    return usage_error("--rate, --plans and --rate-levels are for --plan-set");
  }
  if (!merges.empty()) {
    if (!o.plan_set_out.empty()) return usage_error("--merge merges plan files; it writes no plan set");
    if (!models.empty()) return usage_error("--merge merges plan files; it plans nothing: give no --model with it");
    std::set<int> devices;
    for (const std::string& m : merges) {
      const std::size_t eq = m.find('=');
      const std::string device = eq == std::string::npos ? "" : m.substr(0, eq);
      if (device.empty() || device.size() > 2 || device.find_first_not_of("0123456789") != std::string::npos ||
          eq + 1 >= m.size()) {
        return usage_error("--merge '" + m + "': expected DEVICE=FILE, e.g. 1=plan1.json");
      }
      const int d = std::stoi(device);
      if (!devices.insert(d).second) return usage_error("--merge: device " + device + " is given twice");
      o.merge.emplace_back(d, m.substr(eq + 1));
    }
    if (o.out.empty()) return usage_error("--out: a file name is needed");
    PlanParse outcome;
    outcome.run = true;
    outcome.options = std::move(o);
    return outcome;
  }
  if (models.empty()) return usage_error("--model is required (or --merge)");
  if (o.test_engines && !have_test_engines) {
    return usage_error("--test-engines: this build has no test engines (configure with TRTET_BUILD_TESTS=ON)");
  }
  std::set<std::string> names;
  for (const std::string& text : models) {
    auto spec = parse_model_spec(text);
    if (!spec.ok()) return usage_error(spec.status().message());
    if (!names.insert(spec->name).second) return usage_error("two models are named '" + spec->name + "'");
    if (!std::ifstream(spec->program).good()) {
      return usage_error("model '" + spec->name + "': cannot read the program " + spec->program);
    }
    o.models.push_back(std::move(spec).value());
  }
  if (o.remainder != "none") {
    if (!valid_name(o.remainder)) return usage_error("--remainder: a name of 1 to 64 of A-Z a-z 0-9 _ . -");
    if (names.count(o.remainder) != 0) {
      return usage_error("--remainder '" + o.remainder + "' is also a model's name");
    }
  }
  if (!o.sizes.empty()) {
    auto counts = trtet_run::parse_sm_range(o.sizes);
    if (!counts.ok()) return usage_error("--sizes: " + counts.status().message());
  }
  if (o.out.empty()) return usage_error("--out: a file name is needed");
  if (!o.plan_set_out.empty()) {
    if (app.count("--remainder") && o.remainder != "none") {
      return usage_error("--remainder: a plan set has no remainder (the SLO controller needs a curve for every "
                         "partition, and none is measured on the SMs the models leave); leave it out");
    }
    o.remainder = "none";
    if (o.max_plans < 1 || o.max_plans > 16) return usage_error("--plans: 1 to 16");
    if (o.rate_levels < 2 || o.rate_levels > 16) return usage_error("--rate-levels: 2 to 16");
    std::set<std::string> rated;
    for (const std::string& text : rates) {
      auto range = parse_rate_range(text);
      if (!range.ok()) return usage_error(range.status().message());
      if (names.count(range->model) == 0) return usage_error("--rate '" + text + "': no --model is named '" + range->model + "'");
      if (!rated.insert(range->model).second) return usage_error("--rate: model '" + range->model + "' is given twice");
      o.rates.push_back({range->model, {range->low_per_s, range->high_per_s}});
    }
    for (const ModelSpec& m : o.models) {
      if (rated.count(m.name) == 0) return usage_error("--plan-set: model '" + m.name + "' has no --rate LOW:HIGH");
    }
  }
  PlanParse outcome;
  outcome.run = true;
  outcome.options = std::move(o);
  return outcome;
}

}  // namespace trtet_plan
