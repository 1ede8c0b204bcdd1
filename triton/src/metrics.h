// Triton custom metrics as the backend uses them: a series made with string labels, and the calls on
// a series or family that tolerate a null one (a server without metrics) and drop the server's error.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trtet_triton/triton_api.h"

namespace trtet_triton {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A series of `family` with `labels` into `*out`; the server's error where it refuses (then *out
// stays null). A null family makes no series and no error.
TRITONSERVER_Error* new_series(TRITONSERVER_Metric** out, TRITONSERVER_MetricFamily* family, const MetricLabels& labels);

void increment(TRITONSERVER_Metric* metric, double value = 1.0);
void set_value(TRITONSERVER_Metric* metric, double value);
void drop(TRITONSERVER_Metric*& metric);              // deleted and null
void drop(TRITONSERVER_MetricFamily*& family);        // deleted and null

}  // namespace trtet_triton
