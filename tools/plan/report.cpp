#include "plan/report.h"

#include "plan/rules.h"

namespace trtet_plan {

using torch_tensorrt::executorch_backend::plan::format;

bool meets_targets(double p99_us, double calls_per_s, double p99_target_us, double min_calls_per_s) {
  return p99_us > 0 && p99_us <= p99_target_us && (min_calls_per_s <= 0 || calls_per_s >= min_calls_per_s);
}

std::string curves_csv(const std::vector<ModelNeeds>& models, const std::vector<std::vector<double>>& p50_us) {
  std::string text = "model,sms,p50_us,p99_us,calls_per_s,p99_target_us,min_calls_per_s\n";
  for (std::size_t m = 0; m < models.size(); ++m) {
    for (std::size_t i = 0; i < models[m].curve.size(); ++i) {
      const CurvePoint& p = models[m].curve[i];
      const double p50 = m < p50_us.size() && i < p50_us[m].size() ? p50_us[m][i] : 0.0;
      text += format("%s,%u,%.3f,%.3f,%.1f,%.3f,%.1f\n", models[m].name.c_str(), p.sms, p50, p.p99_us, p.calls_per_s,
                     models[m].p99_target_us, models[m].min_calls_per_s);
    }
  }
  return text;
}

std::string verify_csv(const std::vector<VerifyRow>& rows) {
  std::string text =
      "round,model,sms,p99_target_us,min_calls_per_s,p99_alone_us,p50_beside_us,p99_beside_us,calls_per_s_beside,meets\n";
  for (const VerifyRow& r : rows) {
    text += format("%d,%s,%u,%.3f,%.1f,%.3f,%.3f,%.3f,%.1f,%d\n", r.round, r.model.c_str(), r.sms, r.p99_target_us,
                   r.min_calls_per_s, r.p99_alone_us, r.p50_beside_us, r.p99_beside_us, r.calls_per_s_beside,
                   r.meets ? 1 : 0);
  }
  return text;
}

std::string search_table(const std::vector<ModelNeeds>& models, const SearchResult& result, const GpuShape& gpu) {
  std::string text = format("%-24s %12s %5s %14s %12s %8s\n", "model", "target (us)", "SMs", "predicted p99", "interference",
                            "ratio");
  for (std::size_t i = 0; i < models.size() && i < result.choices.size(); ++i) {
    const Choice& c = result.choices[i];
    text += format("%-24s %12.1f %5u %14.1f %12.2f %8.2f%s\n", models[i].name.c_str(), models[i].p99_target_us, c.sms,
                   c.p99_us, models[i].interference, c.ratio, c.meets ? "" : "  (misses)");
  }
  text += format("total %u SMs of the %u one split hands out (%u on the GPU)\n", result.total_sms, gpu.capacity,
                 gpu.sm_count);
  return text;
}

std::string final_table(const std::vector<VerifyRow>& rows, const GpuShape& gpu, const std::string& remainder_name) {
  std::string text = format("%-24s %11s %5s %15s %16s %15s %10s  %s\n", "model", "target (us)", "SMs", "p99 alone (us)",
                            "p99 beside (us)", "calls/s beside", "headroom", "meets");
  unsigned total = 0;
  for (const VerifyRow& r : rows) {
    total += r.sms;
    const double headroom = r.p99_target_us > 0 ? (r.p99_target_us - r.p99_beside_us) / r.p99_target_us * 100.0 : 0;
    const std::string target = format("%.1f", r.p99_target_us);
    text += format("%-24s %11s %5u %15.1f %16.1f %15.0f %9.1f%%  %s\n", r.model.c_str(), target.c_str(), r.sms,
                   r.p99_alone_us, r.p99_beside_us, r.calls_per_s_beside, headroom,
                   r.meets ? "yes" : (r.min_calls_per_s > 0 ? "NO (p99 or calls/s)" : "NO"));
    if (r.min_calls_per_s > 0) text += format("%-24s   (minimum %.0f calls/s)\n", "", r.min_calls_per_s);
  }
  const unsigned left = gpu.sm_count >= total ? gpu.sm_count - total : 0;
  text += format("SMs: %u planned, of the %u one split hands out (%u on the GPU); %u left over%s\n", total, gpu.capacity,
                 gpu.sm_count, left,
                 remainder_name.empty() ? " (no remainder partition)"
                                        : (" as the remainder partition '" + remainder_name + "'").c_str());
  return text;
}

torch_tensorrt::executorch_backend::PartitionPlan make_plan(const std::vector<VerifyRow>& rows,
                                                             const std::vector<std::string>& programs,
                                                             const torch_tensorrt::executorch_backend::PlanGpu& gpu,
                                                             const std::string& remainder_name) {
  torch_tensorrt::executorch_backend::DevicePlan plan;  // for whichever device applies it
  plan.gpu = gpu;
  plan.remainder_name = remainder_name;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    torch_tensorrt::executorch_backend::PlanPartition p;
    p.name = rows[i].model;
    p.sms = rows[i].sms;
    p.p99_target_us = rows[i].p99_target_us;
    p.min_calls_per_s = rows[i].min_calls_per_s;
    p.p99_alone_us = rows[i].p99_alone_us;
    p.p99_beside_us = rows[i].p99_beside_us;
    if (i < programs.size()) p.program = programs[i];
    plan.partitions.push_back(std::move(p));
  }
  return torch_tensorrt::executorch_backend::PartitionPlan::of(std::move(plan));
}

}  // namespace trtet_plan
