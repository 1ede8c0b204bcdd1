#include <torch_tensorrt/executorch/SloController.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "common/escape.h"
#include "common/status.h"

namespace torch_tensorrt::executorch_backend::slo {
namespace {

std::string quoted(std::string_view text) { return "\"" + escape_for_message(text, 64) + "\""; }

}  // namespace

Result<Ladder> Ladder::make(std::vector<LadderPlan> plans, unsigned device_sms) {
  TRTET_CHECK_OR_RETURN(device_sms > 0, kInvalidArgument, "ladder: the device's SM count is 0");
  TRTET_CHECK_OR_RETURN(!plans.empty(), kInvalidArgument, "ladder: no plans");
  TRTET_CHECK_OR_RETURN(!plans.front().models.empty(), kInvalidArgument, "ladder: plan %s names no models",
                        quoted(plans.front().name).c_str());
  std::vector<std::string> models;
  for (const ModelShare& share : plans.front().models) models.push_back(share.model);

  std::set<std::string, std::less<>> names;
  for (LadderPlan& plan : plans) {
    const std::string p = quoted(plan.name);
    TRTET_CHECK_OR_RETURN(!plan.name.empty(), kInvalidArgument, "ladder: a plan has an empty name");
    TRTET_CHECK_OR_RETURN(names.insert(plan.name).second, kInvalidArgument, "ladder: plan %s is named twice",
                          p.c_str());
    std::vector<ModelShare> ordered(models.size());
    std::vector<bool> seen(models.size(), false);
    std::uint64_t total_sms = 0;
    for (ModelShare& share : plan.models) {
      const std::string m = quoted(share.model);
      std::size_t index = models.size();
      for (std::size_t i = 0; i < models.size(); ++i) {
        if (models[i] == share.model) index = i;
      }
      TRTET_CHECK_OR_RETURN(index < models.size(), kInvalidArgument,
                            "ladder: plan %s names model %s, which plan %s does not", p.c_str(), m.c_str(),
                            quoted(plans.front().name).c_str());
      TRTET_CHECK_OR_RETURN(!seen[index], kInvalidArgument, "ladder: plan %s names model %s twice", p.c_str(),
                            m.c_str());
      seen[index] = true;
      TRTET_CHECK_OR_RETURN(share.sms > 0, kInvalidArgument, "ladder: plan %s gives model %s 0 SMs", p.c_str(),
                            m.c_str());
      total_sms += share.sms;
      TRTET_CHECK_OR_RETURN(!share.curve.empty(), kInvalidArgument,
                            "ladder: plan %s has no latency curve for model %s", p.c_str(), m.c_str());
      for (std::size_t i = 0; i < share.curve.size(); ++i) {
        const CurvePoint& point = share.curve[i];
        TRTET_CHECK_OR_RETURN(std::isfinite(point.rate_per_s) && std::isfinite(point.p99_us) &&
                                  point.rate_per_s >= 0 && point.p99_us >= 0,
                              kInvalidArgument,
                              "ladder: plan %s, model %s: curve point %zu (rate %g calls/s, p99 %g us) is "
                              "negative or not finite",
                              p.c_str(), m.c_str(), i, point.rate_per_s, point.p99_us);
        TRTET_CHECK_OR_RETURN(i == 0 || share.curve[i - 1].rate_per_s < point.rate_per_s, kInvalidArgument,
                              "ladder: plan %s, model %s: the curve is not sorted by rate (point %zu at %g "
                              "calls/s after %g)",
                              p.c_str(), m.c_str(), i, point.rate_per_s, share.curve[i - 1].rate_per_s);
      }
      ordered[index] = std::move(share);
    }
    for (std::size_t i = 0; i < models.size(); ++i) {
      TRTET_CHECK_OR_RETURN(seen[i], kInvalidArgument, "ladder: plan %s does not name model %s", p.c_str(),
                            quoted(models[i]).c_str());
    }
    TRTET_CHECK_OR_RETURN(total_sms <= device_sms, kInvalidArgument,
                          "ladder: plan %s uses %llu SMs; the device has %u", p.c_str(),
                          static_cast<unsigned long long>(total_sms), device_sms);
    plan.models = std::move(ordered);
  }
  Ladder ladder;
  ladder.plans_ = std::move(plans);
  ladder.models_ = std::move(models);
  ladder.device_sms_ = device_sms;
  return ladder;
}

std::optional<std::size_t> Ladder::find_plan(std::string_view name) const {
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> Ladder::find_model(std::string_view model) const {
  for (std::size_t i = 0; i < models_.size(); ++i) {
    if (models_[i] == model) return i;
  }
  return std::nullopt;
}

std::optional<double> Ladder::predict(std::size_t plan, std::size_t model, double rate_per_s) const {
  const std::vector<CurvePoint>& curve = plans_.at(plan).models.at(model).curve;
  if (rate_per_s <= curve.front().rate_per_s) return curve.front().p99_us;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    const CurvePoint& lo = curve[i - 1];
    const CurvePoint& hi = curve[i];
    if (rate_per_s <= hi.rate_per_s) {
      const double t = (rate_per_s - lo.rate_per_s) / (hi.rate_per_s - lo.rate_per_s);
      return lo.p99_us + t * (hi.p99_us - lo.p99_us);
    }
  }
  return std::nullopt;  // beyond the last measured rate
}

}  // namespace torch_tensorrt::executorch_backend::slo
