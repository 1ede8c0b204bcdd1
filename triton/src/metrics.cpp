#include "metrics.h"

namespace trtet_triton {

TRITONSERVER_Error* new_series(TRITONSERVER_Metric** out, TRITONSERVER_MetricFamily* family, const MetricLabels& labels) {
  *out = nullptr;
  if (family == nullptr) return nullptr;
  std::vector<const TRITONSERVER_Parameter*> made;
  made.reserve(labels.size());
  for (const auto& [key, value] : labels) {
    made.push_back(TRITONSERVER_ParameterNew(key.c_str(), TRITONSERVER_PARAMETER_STRING, value.c_str()));
  }
  TRITONSERVER_Error* e = TRITONSERVER_MetricNew(out, family, made.data(), made.size());
  for (const TRITONSERVER_Parameter* p : made) TRITONSERVER_ParameterDelete(const_cast<TRITONSERVER_Parameter*>(p));
  if (e != nullptr) *out = nullptr;
  return e;
}

void increment(TRITONSERVER_Metric* metric, double value) {
  if (metric == nullptr) return;
  TRITONSERVER_Error* e = TRITONSERVER_MetricIncrement(metric, value);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

void set_value(TRITONSERVER_Metric* metric, double value) {
  if (metric == nullptr) return;
  TRITONSERVER_Error* e = TRITONSERVER_MetricSet(metric, value);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

void drop(TRITONSERVER_Metric*& metric) {
  if (metric == nullptr) return;
  TRITONSERVER_Error* e = TRITONSERVER_MetricDelete(metric);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  metric = nullptr;
}

void drop(TRITONSERVER_MetricFamily*& family) {
  if (family == nullptr) return;
  TRITONSERVER_Error* e = TRITONSERVER_MetricFamilyDelete(family);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  family = nullptr;
}

}  // namespace trtet_triton
