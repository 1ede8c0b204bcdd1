// The parameters of a model that follows a plan set (set_parameters.cpp): read without Triton, so they
// are unit-tested on their own.
#pragma once

#include <optional>
#include <string>

namespace trtet_triton {

// Note [plan set parameters]
// --------------------------
// A model follows a plan set (docs/PLANNING.md, "Plan sets") with these keys of the config's
// `parameters` (every value a string_value; each number written plainly: digits, an optional
// fraction, no sign or exponent, at most 15 characters):
//   plan_set_file    the set's file, relative to the model's directory; excludes plan_file,
//                    plan_file.<d>, plan_partition, sms and sms.<group>
//   plan_set_model   the model's name in the set (default: the model's name)
//   slo_p99_us       the model's p99 target, µs (1 to 1e7); without it the model has no target and
//                    runs on whatever plan the others' targets choose
//   slo_min_rate     calls/s the plan must carry for the model whatever its observed rate (0 to 1e6)
// and the set's controller, the same for every model of the set (the first model that makes the
// set fixes them; a later model that gives another value is refused):
//   slo_window_s     the sliding window of latencies, s (0.05 to 10; default 1)
//   slo_interval_ms  the decision period, ms (a whole number, 10 to 60000; default 100)
//   slo_margin       the headroom a new plan must win by, a fraction (0 to 10; default 0.1)
//   slo_confirm      decisions in a row a better plan must win while every target is met (1 to 1000; default 3)
//   slo_dwell_s      the least time between two switches, s (0 to 3600; default 0)
//   slo_min_samples  samples in the window before a model's observed p99 counts (1 to 100000; default 20)
// Every slo_* key and plan_set_model need plan_set_file.

struct SetControl {
  double window_s = 1.0;
  unsigned interval_ms = 100;
  double margin = 0.10;
  unsigned confirm = 3;
  double dwell_s = 0;
  unsigned min_samples = 20;

  bool operator==(const SetControl& o) const {
    return window_s == o.window_s && interval_ms == o.interval_ms && margin == o.margin && confirm == o.confirm &&
           dwell_s == o.dwell_s && min_samples == o.min_samples;
  }
  bool operator!=(const SetControl& o) const { return !(*this == o); }
  // "slo_window_s 1, slo_interval_ms 100, ..." (what a refusal and the log show).
  std::string text() const;
};

struct SetParameters {
  std::optional<std::string> file;  // plan_set_file
  std::optional<std::string> model;  // plan_set_model
  std::optional<double> p99_us;
  double min_rate = 0;
  SetControl control;
  bool control_given = false;  // some key of the set's controller was given
  bool any_slo = false;  // some slo_* key or plan_set_model was given
};

// Whether `key` is one of the keys above (then the value is read into `out`, and `why` says what is
// wrong with it, or stays empty).
bool read_set_parameter(const std::string& key, const std::string& value, SetParameters& out, std::string& why);

// After every key: what the keys ask for together ("" when they fit). `other_partitions` names a
// partition parameter the config gave besides (plan_file, sms, ...), or is empty.
std::string check_set_parameters(const SetParameters& params, const std::string& other_partitions);

}  // namespace trtet_triton
