#include "set_parameters.h"

#include <cstdio>
#include <cstdlib>

namespace trtet_triton {

// ---- a plan set's parameters (Note [plan set parameters], set_parameters.h) ----

namespace {

std::string printed(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

// A plain decimal number within [min, max]: digits, an optional '.' and digits; nothing else.
bool read_number(const std::string& key, const std::string& text, double min, double max, bool whole, const char* unit,
                 double& out, std::string& why) {
  bool plain = !text.empty() && text.size() <= 15;
  std::size_t dots = 0;
  for (std::size_t i = 0; plain && i < text.size(); ++i) {
    if (text[i] == '.') {
      ++dots;
      plain = !whole && dots == 1 && i > 0 && i + 1 < text.size();
    } else {
      plain = text[i] >= '0' && text[i] <= '9';
    }
  }
  const std::string range = printed(min) + " to " + printed(max);
  if (!plain) {
    why = "parameter '" + key + "' is '" + text.substr(0, 64) + "'; it takes " + (whole ? "a whole number" : "a number") +
          " of " + unit + " from " + range + ", written plainly (digits" + (whole ? "" : ", an optional fraction") + ")";
    return false;
  }
  const double value = std::strtod(text.c_str(), nullptr);
  if (!(value >= min && value <= max)) {
    why = "parameter '" + key + "' is " + text + "; it takes " + range + " " + unit;
    return false;
  }
  out = value;
  return true;
}

}  // namespace

std::string SetControl::text() const {
  return "slo_window_s " + printed(window_s) + ", slo_interval_ms " + std::to_string(interval_ms) + ", slo_margin " +
         printed(margin) + ", slo_confirm " + std::to_string(confirm) + ", slo_dwell_s " + printed(dwell_s) +
         ", slo_min_samples " + std::to_string(min_samples);
}

bool read_set_parameter(const std::string& key, const std::string& value, SetParameters& out, std::string& why) {
  double number = 0;
  if (key == "plan_set_file") {
    if (value.empty()) why = "parameter 'plan_set_file' is empty; it names the plan set's file";
    out.file = value;
    return true;
  }
  if (key == "plan_set_model") {
    out.any_slo = true;
    if (value.empty() || value.size() > 64) why = "parameter 'plan_set_model' takes 1 to 64 characters (a model of the set)";
    out.model = value;
    return true;
  }
  if (key.rfind("slo_", 0) != 0) return false;
  out.any_slo = true;
  SetControl& c = out.control;
  if (key == "slo_p99_us") {
    if (read_number(key, value, 1, 1e7, false, "microseconds", number, why)) out.p99_us = number;
  } else if (key == "slo_min_rate") {
    if (read_number(key, value, 0, 1e6, false, "calls/s", number, why)) out.min_rate = number;
  } else if (key == "slo_window_s") {
    if (read_number(key, value, 0.05, 10, false, "seconds", number, why)) c.window_s = number;
  } else if (key == "slo_interval_ms") {
    if (read_number(key, value, 10, 60000, true, "milliseconds", number, why)) c.interval_ms = static_cast<unsigned>(number);
  } else if (key == "slo_margin") {
    if (read_number(key, value, 0, 10, false, "(a fraction)", number, why)) c.margin = number;
  } else if (key == "slo_confirm") {
    if (read_number(key, value, 1, 1000, true, "decisions", number, why)) c.confirm = static_cast<unsigned>(number);
  } else if (key == "slo_dwell_s") {
    if (read_number(key, value, 0, 3600, false, "seconds", number, why)) c.dwell_s = number;
  } else if (key == "slo_min_samples") {
    if (read_number(key, value, 1, 100000, true, "samples", number, why)) c.min_samples = static_cast<unsigned>(number);
  } else {
    return false;  // an unknown slo_ key: the caller names it with the others
  }
  out.control_given = out.control_given || (key != "slo_p99_us" && key != "slo_min_rate");
  return true;
}

std::string check_set_parameters(const SetParameters& params, const std::string& other_partitions) {
  if (!params.file.has_value()) {
    if (params.any_slo) {
      return "the slo_* parameters and plan_set_model belong to a model that follows a plan set: give plan_set_file";
    }
    return "";
  }
  if (!other_partitions.empty()) {
    return "the parameters give both a plan set (plan_set_file) and " + other_partitions +
           ": give one (a plan set holds every partition the model runs on)";
  }
  if (params.min_rate > 0 && !params.p99_us.has_value()) {
    return "parameter 'slo_min_rate' is a rate the model's target must be met at: give slo_p99_us too";
  }
  return "";
}

}  // namespace trtet_triton
