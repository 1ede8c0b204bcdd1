// trtet-plan's command line: the models (one --model each) and how to measure and verify them.
// Pure parsing, tested without a GPU (tests/plan/plan_options_test.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trtet_plan {

namespace ex = torch_tensorrt::executorch_backend;

/// Where a model's runner keeps its input and output buffers (trtet-run's --io).
enum class Io { kDevice, kPinned, kHost };
const char* to_string(Io io);

/// One --model: name=NAME,program=FILE,p99_us=US[,calls_per_s=N][,io=device|pinned|host][,shape=DIMS]...[,method=M]
struct ModelSpec {
  std::string name;            ///< 1-64 of [A-Za-z0-9_.-]
  std::string program;         ///< the .pte
  std::string method = "forward";
  double p99_target_us = 0;    ///< > 0
  double min_calls_per_s = 0;  ///< 0: none
  Io io = Io::kDevice;
  std::vector<std::string> shapes;  ///< DIMS per shape= key: one for all inputs or one per input
};

struct PlanOptions {
  std::vector<ModelSpec> models;
  int device = 0;
  int iterations = 500;            ///< calls per measured point, and per model beside the others
  int warmup = 30;
  std::string sizes;               ///< FIRST:LAST:STEP; empty: every size the GPU allows
  int rounds = 4;                  ///< side-by-side verifications (the first, then adjustments)
  bool spread = false;             ///< give the SMs left over to the models with the least margin
  std::string remainder = "headroom";  ///< the remainder partition's name in the plan; "none": no remainder
  bool load_remainder = false;     ///< verify with an SM-flooding load on the remainder
  int load_us = 1000;
  std::string out = "plan.json";   ///< the plan file
  std::string csv_prefix;          ///< PREFIX_curves.csv and PREFIX_verify.csv (for tools/plot_plan.py); empty: none
  bool test_engines = false;
  unsigned long long exhaustive_limit = 20000000;  ///< combinations the quality check may try
  /// --merge DEVICE=FILE (repeat): no planning; the plan files for any device merged into one
  /// plan naming each device (--out). Needs no GPU.
  std::vector<std::pair<int, std::string>> merge;
  /// --plan-set FILE: write a plan set (PlanSet.h) of at most `max_plans` plans covering the mixes
  /// of the models' --rate ranges (Note [plan set selection], plan/plan_set_select.h) instead of one plan.
  std::string plan_set_out;
  std::vector<std::pair<std::string, std::pair<double, double>>> rates;  ///< per model: its --rate LOW, HIGH
  int max_plans = 4;
  int rate_levels = 4;
};

/// What parse_plan_options decided (as trtet-run's ParseOutcome): run, or exit with exit_code after
/// printing message (help to stdout with 0, an error to stderr otherwise).
struct PlanParse {
  bool run = false;
  int exit_code = 0;
  std::string message;
  PlanOptions options;
};

/// Exit statuses of trtet-plan.
enum PlanExit : int {
  kPlanOk = 0,
  kPlanUsage = 1,       ///< bad arguments
  kPlanNoGpu = 2,
  kPlanFailed = 3,      ///< a program failed to load or run, or a file could not be written
  kPlanInfeasible = 4,  ///< no plan meets every target (the report says which model and its best)
};

/// One --model value. kInvalidArgument naming the bad key or value.
ex::Result<ModelSpec> parse_model_spec(const std::string& text);

/// trtet-plan's arguments. Checks what needs no GPU: at least one model, unique names, the
/// remainder's name not a model's, files that exist.
PlanParse parse_plan_options(int argc, const char* const* argv, bool have_test_engines);

/// A model or partition name: 1 to 64 characters of [A-Za-z0-9_.-].
bool valid_name(const std::string& name);

}  // namespace trtet_plan
