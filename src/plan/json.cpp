// The JSON side of the plan files (plan/json.h): untrusted text to checked values and back, in the
// current format and the two of version 1 that users still have.
#include "plan/json.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace torch_tensorrt::executorch_backend::plan {
namespace {

// Nesting depth outside strings; the parser is never handed anything deeper than kMaxDepth.
bool too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

// The body of a version-1 "trtet-partition-plan" object or of one entry of the current format:
// gpu, partitions and remainder, checked (device_plan_problem).
Result<DevicePlan> device_plan_from_json(const json& object) {
  DevicePlan plan;
  TRTET_PLAN_TRY(read_gpu(object["gpu"], plan.gpu));
  TRTET_PLAN_TRY(read_partitions(object["partitions"], plan.partitions));
  TRTET_PLAN_TRY(read_remainder(object, plan.remainder_name));
  TRTET_PLAN_TRY(device_plan_problem(plan));
  return plan;
}

std::string read_version(const json& root, const char* format_name, int want) {
  unsigned version = 0;
  std::string problem = Reader::count(root["version"], "version", version);
  if (!problem.empty()) return problem;
  if (version != static_cast<unsigned>(want)) {
    return format("version %u of %s; this library reads version %d", version, format_name, want);
  }
  return "";
}

// Version 1, one device: {"format": "trtet-partition-plan", "version": 1, "gpu", "partitions", "remainder"}.
Result<DevicePlan> v1_plan_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the plan", {"format", "version", "gpu", "partitions"}, {"remainder"}));
  if (!root["format"].is_string() || root["format"].get_ref<const std::string&>() != kFormat) {
    return invalid(format("\"format\" must be \"%s\"", kFormat));
  }
  TRTET_PLAN_TRY(read_version(root, kFormat, 1));
  return device_plan_from_json(root);
}

// "devices": an array of 1 to kMaxPlanDevices entries (counted before any is read); the problem or "".
std::string device_list_problem(const json& devices) {
  if (!devices.is_array()) return "\"devices\" must be an array";
  if (devices.empty() || devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return format("a plan names 1 to %d devices, this one %zu", kMaxPlanDevices, devices.size());
  }
  return "";
}

// Version 1, several devices: {"format": "trtet-partition-plans", "version": 1, "devices": [{"device", "plan"}]}.
Result<PartitionPlan> v1_plans_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the file", {"format", "version", "devices"}, {}));
  TRTET_PLAN_TRY(read_version(root, kLegacyPlansFormat, 1));
  const json& devices = root["devices"];
  TRTET_PLAN_TRY(device_list_problem(devices));
  PartitionPlan plan;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& entry = devices[i];
    const std::string where = format("devices[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"device", "plan"}, {}));
    unsigned device = 0;
    TRTET_PLAN_TRY(Reader::count(entry["device"], where + ".device", device));
    if (device >= static_cast<unsigned>(kMaxPlanDevices)) {
      return invalid(format("%s.device is %u; it must be 0 to %d", where.c_str(), device, kMaxPlanDevices - 1));
    }
    auto one = v1_plan_from_json(entry["plan"]);
    if (!one.ok()) return within(one.error(), format("%s (device %u).plan", where.c_str(), device));
    one->device = static_cast<int>(device);
    plan.devices.push_back(std::move(*one));
  }
  return plan;
}

// The current format: {"format": "trtet-partition-plan", "version": 2, "devices": [{"device"?, "gpu", ...}]}.
Result<PartitionPlan> v2_plan_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the plan", {"format", "version", "devices"}, {}));
  const json& devices = root["devices"];
  TRTET_PLAN_TRY(device_list_problem(devices));
  PartitionPlan plan;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& entry = devices[i];
    std::string where = format("devices[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"gpu", "partitions"}, {"device", "remainder"}));
    int device = kAnyDevice;
    if (entry.contains("device") && !entry["device"].is_null()) {
      unsigned index = 0;
      TRTET_PLAN_TRY(Reader::count(entry["device"], where + ".device", index));
      if (index >= static_cast<unsigned>(kMaxPlanDevices)) {
        return invalid(format("%s.device is %u; it must be 0 to %d", where.c_str(), index, kMaxPlanDevices - 1));
      }
      device = static_cast<int>(index);
      where += format(" (device %d)", device);
    }
    auto one = device_plan_from_json(entry);
    if (!one.ok()) return within(one.error(), where);
    one->device = device;
    plan.devices.push_back(std::move(*one));
  }
  return plan;
}

// "trtet-partition-plan": version 1 (one device, for any device) or the current version.
Result<PartitionPlan> current_or_v1_from_json(const json& root) {
  if (!root.contains("version")) return invalid("the plan has no \"version\"");
  unsigned version = 0;
  TRTET_PLAN_TRY(Reader::count(root["version"], "version", version));
  if (version == 1) {
    auto one = v1_plan_from_json(root);
    if (!one.ok()) return one.error();
    return PartitionPlan::of(std::move(*one));
  }
  if (version != static_cast<unsigned>(kPartitionPlanVersion)) {
    return invalid(format("version %u of %s; this library reads versions 1 to %d", version, kFormat,
                          kPartitionPlanVersion));
  }
  return v2_plan_from_json(root);
}

}  // namespace

// The file's text as JSON, after the limits every plan file has: its size, its nesting (checked
// before the parser sees it), and no key twice in one object.
Result<json> parse_checked(std::string_view text) {
  if (text.size() > kMaxPlanBytes) {
    return invalid(format("%zu bytes; a plan file is at most %zu", text.size(), kMaxPlanBytes));
  }
  if (too_deep(text)) return invalid(format("nested more than %d deep", kMaxDepth));
  // Repeated keys: nlohmann keeps the last silently, so the parse callback records them.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  const json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second && repeated.empty()) repeated = key.size() > 64 ? key.substr(0, 64) : key;
    }
    return true;
  };
  try {
    json root = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
    if (root.is_discarded()) return invalid("not valid JSON");
    if (!repeated.empty()) {
      return invalid(format("the key \"%s\" appears twice in one object", printable(repeated) ? repeated.c_str() : "?"));
    }
    return root;
  } catch (const std::exception& e) {
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

// A file's text, at most kMaxPlanBytes.
Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid("cannot open " + path);
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxPlanBytes) {
      return invalid(format("%s is larger than %zu bytes, the most a plan file may be", path.c_str(), kMaxPlanBytes));
    }
  }
  if (in.bad()) return invalid("cannot read " + path);
  return text;
}

// `e` with `where` put after the "partition plan: " its message starts with.
Error within(const Error& e, const std::string& where) {
  static const std::string kPrefix = "partition plan: ";
  std::string message = e.message();
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
  return Error(e.code(), kPrefix + where + ": " + message, e.limits(), e.closest_valid());
}

Error in_file(const Error& e, const std::string& path) {
  return Error(e.code(), path + ": " + e.message(), e.limits(), e.closest_valid());
}

std::string read_gpu(const json& gpu, PlanGpu& out) {
  std::string problem = Reader::keys(gpu, "gpu", {"name", "sm_count", "min_partition", "alignment", "granularity",
                                                  "max_partitioned_sms"}, {});
  if (problem.empty()) problem = Reader::text(gpu["name"], "gpu.name", kMaxGpuName, out.name);
  if (problem.empty()) problem = Reader::count(gpu["sm_count"], "gpu.sm_count", out.sm_count);
  if (problem.empty()) problem = Reader::count(gpu["min_partition"], "gpu.min_partition", out.min_partition);
  if (problem.empty()) problem = Reader::count(gpu["alignment"], "gpu.alignment", out.alignment);
  if (problem.empty()) problem = Reader::count(gpu["granularity"], "gpu.granularity", out.granularity);
  if (problem.empty()) {
    problem = Reader::count(gpu["max_partitioned_sms"], "gpu.max_partitioned_sms", out.max_partitioned_sms);
  }
  return problem;
}

std::string read_partitions(const json& partitions, std::vector<PlanPartition>& out) {
  if (!partitions.is_array()) return "\"partitions\" must be an array";
  if (partitions.empty() || partitions.size() > kMaxPartitions) {
    return format("a plan has 1 to %zu partitions, this one %zu", kMaxPartitions, partitions.size());
  }
  out.clear();
  out.reserve(partitions.size());
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    const json& p = partitions[i];
    const std::string where = format("partitions[%zu]", i);
    std::string problem = Reader::keys(p, where.c_str(), {"name", "sms", "p99_target_us"},
                                       {"min_calls_per_s", "p99_alone_us", "p99_beside_us", "program"});
    PlanPartition part;
    if (problem.empty()) problem = Reader::text(p["name"], where + ".name", 64, part.name);
    if (problem.empty()) problem = Reader::count(p["sms"], where + ".sms", part.sms);
    if (problem.empty()) problem = Reader::number(p["p99_target_us"], where + ".p99_target_us", part.p99_target_us);
    const std::pair<const char*, double*> optional[] = {{"min_calls_per_s", &part.min_calls_per_s},
                                                        {"p99_alone_us", &part.p99_alone_us},
                                                        {"p99_beside_us", &part.p99_beside_us}};
    for (const auto& [key, value] : optional) {
      if (problem.empty() && p.contains(key)) problem = Reader::number(p[key], where + "." + key, *value);
    }
    if (problem.empty() && p.contains("program")) {
      problem = Reader::text(p["program"], where + ".program", kMaxProgram, part.program);
    }
    if (!problem.empty()) return problem;
    out.push_back(std::move(part));
  }
  return "";
}

std::string read_remainder(const json& object, std::string& out) {
  out.clear();
  if (!object.contains("remainder") || object["remainder"].is_null()) return "";
  std::string problem = Reader::text(object["remainder"], "remainder", 64, out);
  if (problem.empty() && out.empty()) problem = "remainder must be null or a name, not \"\"";
  return problem;
}

ordered_json gpu_to_json(const PlanGpu& gpu) {
  return {{"name", gpu.name},
          {"sm_count", gpu.sm_count},
          {"min_partition", gpu.min_partition},
          {"alignment", gpu.alignment},
          {"granularity", gpu.granularity},
          {"max_partitioned_sms", gpu.max_partitioned_sms}};
}

ordered_json partitions_to_json(const std::vector<PlanPartition>& partitions) {
  ordered_json out = ordered_json::array();
  for (const PlanPartition& p : partitions) {
    out.push_back({{"name", p.name},
                   {"sms", p.sms},
                   {"p99_target_us", p.p99_target_us},
                   {"min_calls_per_s", p.min_calls_per_s},
                   {"p99_alone_us", p.p99_alone_us},
                   {"p99_beside_us", p.p99_beside_us},
                   {"program", p.program}});
  }
  return out;
}

Result<PartitionPlan> plan_from_json(const json& root) {
  if (!root.is_object()) return invalid("the plan must be an object");
  auto format_it = root.find("format");
  if (format_it == root.end()) return invalid("the plan has no \"format\"");
  const bool plan_format = format_it->is_string() && format_it->get_ref<const std::string&>() == kFormat;
  if (!plan_format && !(format_it->is_string() && format_it->get_ref<const std::string&>() == kLegacyPlansFormat)) {
    return invalid(format("\"format\" must be \"%s\" (or version 1's several-GPU \"%s\")", kFormat,
                          kLegacyPlansFormat));
  }
  auto plan = plan_format ? current_or_v1_from_json(root) : v1_plans_from_json(root);
  if (!plan.ok()) return plan.error();
  TRTET_PLAN_TRY(plan_problem(*plan));
  return plan;
}

ordered_json plan_to_json(const PartitionPlan& plan) {
  ordered_json root;
  root["format"] = kFormat;
  root["version"] = kPartitionPlanVersion;
  ordered_json devices = ordered_json::array();
  for (const DevicePlan& d : plan.devices) {
    ordered_json entry;
    if (d.device != kAnyDevice) entry["device"] = d.device;
    entry["gpu"] = gpu_to_json(d.gpu);
    entry["partitions"] = partitions_to_json(d.partitions);
    entry["remainder"] = d.remainder_name.empty() ? ordered_json(nullptr) : ordered_json(d.remainder_name);
    devices.push_back(std::move(entry));
  }
  root["devices"] = std::move(devices);
  return root;
}

}  // namespace torch_tensorrt::executorch_backend::plan
