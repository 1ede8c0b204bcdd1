// trtet-plan: a plan of green-context partitions of one GPU under which several models meet their
// p99 targets side by side, with the fewest SMs. See --help and docs/PLANNING.md.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "plan/measure.h"
#include "plan/options.h"
#include "plan/plan_set_select.h"
#include "plan/planner.h"
#include "plan/report.h"
#include "run/engines.h"

namespace et = torch_tensorrt::executorch_backend;

namespace trtet_plan {
namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "trtet-plan: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

int exit_for(const ex::Status& status) {
  return status.code() == ex::ErrorCode::kInvalidArgument ? kPlanUsage
         : status.code() == ex::ErrorCode::kNoDevice      ? kPlanNoGpu
                                                          : kPlanFailed;
}

// --merge: any-device plans into one plan that names each device, without a GPU.
int merge(const PlanOptions& o) {
  auto plans = et::merge_partition_plans(o.merge);
  if (!plans.ok()) {
    std::fprintf(stderr, "trtet-plan: --merge: %s\n", plans.error().message().c_str());
    return kPlanUsage;
  }
  auto text = et::partition_plan_json(*plans);
  if (!text.ok()) {
    std::fprintf(stderr, "trtet-plan: --merge: %s\n", text.error().message().c_str());
    return kPlanFailed;
  }
  if (!write_file(o.out, *text)) return kPlanFailed;
  for (const auto& d : plans->devices) {
    std::printf("GPU %d: %s, %zu partition%s, %u SMs\n", d.device, d.gpu.name.c_str(), d.partitions.size(),
                d.partitions.size() == 1 ? "" : "s", d.total_sms());
  }
  std::printf("plans for %zu GPUs written to %s. Apply it with apply_partition_plan "
              "(torch_tensorrt/executorch/PartitionPlan.h) or name it in the Triton backend's plan_file.\n",
              plans->devices.size(), o.out.c_str());
  return kPlanOk;
}

// --plan-set: each model measured alone on every size (as the planner measures), then the few plans
// that cover the mixes of the --rate ranges (Note [plan set selection]), written as one plan set.
// The curve of a model on a size is the point measured there, one call at a time: its p99 up to the
// calls/s it sustained; beyond that rate the SLO controller predicts nothing (infeasible).
int plan_set(const PlanOptions& o) {
  auto measurer = GpuMeasurer::create(o);
  if (!measurer.ok()) {
    std::fprintf(stderr, "trtet-plan: %s\n", measurer.status().message().c_str());
    return exit_for(measurer.status());
  }
  auto gpu = (*measurer)->gpu();
  if (!gpu.ok()) {
    std::fprintf(stderr, "trtet-plan: %s\n", gpu.status().message().c_str());
    return exit_for(gpu.status());
  }
  SetInput in;
  in.gpu = GpuShape{gpu->sm_count, gpu->granularity, gpu->max_partitioned_sms};
  in.max_plans = static_cast<std::size_t>(o.max_plans);
  in.levels = static_cast<unsigned>(o.rate_levels);
  auto sizes = sizes_to_measure(o.sizes, in.gpu, stdout);
  auto curves = sizes.ok() ? (*measurer)->curves(*sizes, stdout) : ex::Result<Curves>(sizes.status());
  if (!curves.ok()) {
    std::fprintf(stderr, "trtet-plan: %s\n", curves.status().message().c_str());
    return exit_for(curves.status());
  }
  in.sizes = *sizes;
  for (std::size_t m = 0; m < o.models.size(); ++m) {
    SetModel model{o.models[m].name, o.models[m].p99_target_us, 0, 0, o.models[m].program, {}};
    for (const auto& [name, range] : o.rates) {
      if (name == model.name) model.low_per_s = range.first, model.high_per_s = range.second;
    }
    for (std::size_t s = 0; s < in.sizes.size(); ++s) {
      std::vector<ex::slo::CurvePoint> curve;
      for (const CurvePoint& point : curves->points[m]) {
        if (point.sms == in.sizes[s] && point.calls_per_s > 0) curve.push_back({point.calls_per_s, point.p99_us});
      }
      model.curves.push_back(curve);
    }
    in.models.push_back(std::move(model));
  }
  auto selection = select_plan_set(in);
  if (!selection.ok()) {
    std::fprintf(stderr, "trtet-plan: %s\n", selection.status().message().c_str());
    return exit_for(selection.status());
  }
  std::printf("\n%s", selection_report(in, *selection).c_str());
  if (selection->plans.empty()) {
    std::printf("no plan set written: no mix of load can be met\n");
    return kPlanInfeasible;
  }
  auto set = make_plan_set(in, *selection, *gpu);
  auto text = set.ok() ? et::plan_set_json(*set) : ex::Result<std::string>(set.status());
  if (!text.ok()) {
    std::fprintf(stderr, "trtet-plan: the plan set cannot be written: %s\n", text.status().message().c_str());
    return kPlanFailed;
  }
  if (!write_file(o.plan_set_out, *text)) return kPlanFailed;
  std::printf("plan set of %zu plans written to %s. Apply it with apply_plan_set and follow the load with "
              "plan_set_ladder (torch_tensorrt/executorch/PlanSet.h).\n",
              set->plans.size(), o.plan_set_out.c_str());
  return selection->infeasible + selection->uncovered == 0 ? kPlanOk : kPlanInfeasible;
}

int run(const PlanOptions& o) {
  if (!o.merge.empty()) return merge(o);
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-plan: no usable GPU: %s\n",
                 counted != cudaSuccess ? cudaGetErrorString(counted) : "no CUDA device visible");
    return kPlanNoGpu;
  }
  if (o.device >= devices) {
    std::fprintf(stderr, "trtet-plan: --device %d: only %d device(s) visible\n", o.device, devices);
    return kPlanUsage;
  }
  if (!o.plan_set_out.empty()) return plan_set(o);
  auto result = run_planner_on_gpu(o, stdout);
  if (!result.ok()) {
    std::fprintf(stderr, "trtet-plan: %s\n", result.status().message().c_str());
    return exit_for(result.status());
  }
  int code = result->exit_code;
  if (!o.csv_prefix.empty()) {
    const std::string curves = o.csv_prefix + "_curves.csv";
    const std::string verify = o.csv_prefix + "_verify.csv";
    if (!write_file(curves, curves_csv(result->models, result->p50_us))) return kPlanFailed;
    if (!write_file(verify, verify_csv(result->verify))) return kPlanFailed;
    std::printf("\ncurves written to %s, side-by-side runs to %s (plot: tools/plot_plan.py %s %s plan.png)\n",
                curves.c_str(), verify.c_str(), curves.c_str(), verify.c_str());
  }
  if (!result->plan) {
    std::printf("no plan file written\n");
    return code;
  }
  auto text = et::partition_plan_json(*result->plan);
  if (!text.ok()) {
    std::fprintf(stderr, "trtet-plan: the plan cannot be written: %s\n", text.error().message().c_str());
    return kPlanFailed;
  }
  if (!write_file(o.out, *text)) return kPlanFailed;
  std::printf("\nplan written to %s: every model meets its targets beside the others. Apply it with "
              "apply_partition_plan (torch_tensorrt/executorch/PartitionPlan.h).\n",
              o.out.c_str());
  return code;
}

}  // namespace
}  // namespace trtet_plan

int main(int argc, char** argv) {
  const trtet_plan::PlanParse parsed = trtet_plan::parse_plan_options(argc, argv, trtet_run::have_test_engines());
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  return trtet_plan::run(parsed.options);
}
