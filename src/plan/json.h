// The JSON side of the plan files (PartitionPlan.h, PlanSet.h): the limits every plan file has, a
// reader that checks each value's type and range before use, and the pieces every format shares
// (a GPU, a list of partitions, a remainder) to and from JSON. Defined in json.cpp.
#pragma once

#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "plan/rules.h"

namespace torch_tensorrt::executorch_backend::plan {

using json = nlohmann::json;
/// What the writers build: keys in the order written, so a file starts with its format and version.
using ordered_json = nlohmann::ordered_json;

inline constexpr char kFormat[] = "trtet-partition-plan";
/// Version 1's several-device file, still read.
inline constexpr char kLegacyPlansFormat[] = "trtet-partition-plans";
inline constexpr std::size_t kMaxPlanBytes = 1 << 20;
inline constexpr int kMaxDepth = 8;

/// Returns invalid(problem) from the enclosing function when `expr` (a problem, empty when none) names one.
#define TRTET_PLAN_TRY(expr)                         \
  do {                                               \
    std::string problem_ = (expr);                   \
    if (!problem_.empty()) return invalid(problem_); \
  } while (0)

// Each reads one value; the problem, or "" when the value is valid (then stored in `out`).
class Reader {
 public:
  // The object at `where` must have exactly the keys in `required` plus any of `optional`.
  static std::string keys(const json& object, const char* where, std::initializer_list<const char*> required,
                          std::initializer_list<const char*> optional) {
    if (!object.is_object()) return format("%s must be an object", where);
    for (const char* key : required) {
      if (!object.contains(key)) return format("%s has no \"%s\"", where, key);
    }
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool known = false;
      for (const char* key : required) known = known || it.key() == key;
      for (const char* key : optional) known = known || it.key() == key;
      if (!known) {
        const std::string shown = it.key().size() > 64 ? it.key().substr(0, 64) + "..." : it.key();
        return format("%s has an unknown key \"%s\"", where, printable(shown) ? shown.c_str() : "(unprintable)");
      }
    }
    return "";
  }

  static std::string count(const json& value, const std::string& where, unsigned& out) {
    if (!value.is_number_integer()) return format("%s must be a whole number", where.c_str());
    if (value.is_number_unsigned()) {
      const auto v = value.get<unsigned long long>();
      if (v > kMaxSms) return format("%s is %llu; at most %llu", where.c_str(), v, kMaxSms);
      out = static_cast<unsigned>(v);
      return "";
    }
    const auto v = value.get<long long>();
    if (v < 0 || static_cast<unsigned long long>(v) > kMaxSms) {
      return format("%s is %lld; it must be 0 to %llu", where.c_str(), v, kMaxSms);
    }
    out = static_cast<unsigned>(v);
    return "";
  }

  static std::string number(const json& value, const std::string& where, double& out) {
    if (!value.is_number()) return format("%s must be a number", where.c_str());
    out = value.get<double>();
    if (!std::isfinite(out) || out < 0 || out > kMaxMicroseconds) {
      return format("%s must be a number in [0, 1e12]", where.c_str());
    }
    return "";
  }

  static std::string text(const json& value, const std::string& where, std::size_t max, std::string& out) {
    if (!value.is_string()) return format("%s must be a string", where.c_str());
    const auto& s = value.get_ref<const std::string&>();
    if (s.size() > max) return format("%s is longer than %zu bytes", where.c_str(), max);
    if (!printable(s)) return format("%s has control characters", where.c_str());
    out = s;
    return "";
  }
};

/// The file's text as JSON, after the limits every plan file has: its size (1 MiB), its nesting
/// (8, checked before the parser sees it), and no key twice in one object.
Result<json> parse_checked(std::string_view text);
/// A file's text, at most 1 MiB.
Result<std::string> read_text(const std::string& path);
/// `e` with `where` put after the "partition plan: " its message starts with.
Error within(const Error& e, const std::string& where);
/// `e` with "<path>: " before its message.
Error in_file(const Error& e, const std::string& path);

/// The object "gpu" (every field required). The problem, or "" (then stored in `out`).
std::string read_gpu(const json& gpu, PlanGpu& out);
/// The array "partitions": 1 to kMaxPartitions entries, each read (not yet checked against the GPU).
std::string read_partitions(const json& partitions, std::vector<PlanPartition>& out);
/// The optional key "remainder" of `object`: null, absent, or a name.
std::string read_remainder(const json& object, std::string& out);
ordered_json gpu_to_json(const PlanGpu& gpu);
ordered_json partitions_to_json(const std::vector<PlanPartition>& partitions);

/// A plan in any format PartitionPlan.h reads, every field checked (parse_partition_plan's rules).
Result<PartitionPlan> plan_from_json(const json& root);
/// The plan in the current format, as plan_from_json reads it back.
ordered_json plan_to_json(const PartitionPlan& plan);

}  // namespace torch_tensorrt::executorch_backend::plan
