// The partition-plan file (torch_tensorrt/executorch/PartitionPlan.h): parsing untrusted JSON,
// checking a plan against a GPU without touching it, and applying it through split_device.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "green/partition_plan_rules.h"
#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxPlanBytes = 1 << 20;
constexpr int kMaxDepth = 8;
constexpr char kFormat[] = "trtet-partition-plan";

using namespace green::plan_rules;  // the format's rules (partition_plan_rules.h)

// ---- reading: every value's type and range checked before use ----

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

#define TRTET_PLAN_TRY(expr)                   \
  do {                                         \
    std::string problem_ = (expr);             \
    if (!problem_.empty()) return invalid(problem_); \
  } while (0)

GreenContextResult<PartitionPlan> from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the plan", {"format", "version", "gpu", "partitions"}, {"remainder"}));
  if (!root["format"].is_string() || root["format"].get_ref<const std::string&>() != kFormat) {
    return invalid(format("\"format\" must be \"%s\"", kFormat));
  }
  unsigned version = 0;
  TRTET_PLAN_TRY(Reader::count(root["version"], "version", version));
  if (version != kPartitionPlanVersion) {
    return invalid(format("version %u; this library reads version %d", version, kPartitionPlanVersion));
  }
  PartitionPlan plan;
  const json& gpu = root["gpu"];
  TRTET_PLAN_TRY(Reader::keys(gpu, "gpu", {"name", "sm_count", "min_partition", "alignment", "granularity",
                                           "max_partitioned_sms"}, {}));
  TRTET_PLAN_TRY(Reader::text(gpu["name"], "gpu.name", kMaxGpuName, plan.gpu.name));
  TRTET_PLAN_TRY(Reader::count(gpu["sm_count"], "gpu.sm_count", plan.gpu.sm_count));
  TRTET_PLAN_TRY(Reader::count(gpu["min_partition"], "gpu.min_partition", plan.gpu.min_partition));
  TRTET_PLAN_TRY(Reader::count(gpu["alignment"], "gpu.alignment", plan.gpu.alignment));
  TRTET_PLAN_TRY(Reader::count(gpu["granularity"], "gpu.granularity", plan.gpu.granularity));
  TRTET_PLAN_TRY(Reader::count(gpu["max_partitioned_sms"], "gpu.max_partitioned_sms", plan.gpu.max_partitioned_sms));

  const json& partitions = root["partitions"];
  if (!partitions.is_array()) return invalid("\"partitions\" must be an array");
  if (partitions.empty() || partitions.size() > kMaxPartitions) {
    return invalid(format("a plan has 1 to %zu partitions, this one %zu", kMaxPartitions, partitions.size()));
  }
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    const json& p = partitions[i];
    const std::string where = format("partitions[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(p, where.c_str(), {"name", "sms", "p99_target_us"},
                                {"min_calls_per_s", "p99_alone_us", "p99_beside_us", "program"}));
    PlanPartition part;
    TRTET_PLAN_TRY(Reader::text(p["name"], where + ".name", 64, part.name));
    TRTET_PLAN_TRY(Reader::count(p["sms"], where + ".sms", part.sms));
    TRTET_PLAN_TRY(Reader::number(p["p99_target_us"], where + ".p99_target_us", part.p99_target_us));
    if (p.contains("min_calls_per_s")) {
      TRTET_PLAN_TRY(Reader::number(p["min_calls_per_s"], where + ".min_calls_per_s", part.min_calls_per_s));
    }
    if (p.contains("p99_alone_us")) {
      TRTET_PLAN_TRY(Reader::number(p["p99_alone_us"], where + ".p99_alone_us", part.p99_alone_us));
    }
    if (p.contains("p99_beside_us")) {
      TRTET_PLAN_TRY(Reader::number(p["p99_beside_us"], where + ".p99_beside_us", part.p99_beside_us));
    }
    if (p.contains("program")) TRTET_PLAN_TRY(Reader::text(p["program"], where + ".program", kMaxProgram, part.program));
    plan.partitions.push_back(std::move(part));
  }
  if (root.contains("remainder") && !root["remainder"].is_null()) {
    TRTET_PLAN_TRY(Reader::text(root["remainder"], "remainder", 64, plan.remainder_name));
    if (plan.remainder_name.empty()) return invalid("remainder must be null or a name, not \"\"");
  }
  TRTET_PLAN_TRY(plan_problem(plan));
  return plan;
}


// The file's text as JSON, after the limits every plan file has: its size, its nesting (checked
// before the parser sees it), and no key twice in one object.
GreenContextResult<json> parse_checked(std::string_view text) {
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
GreenContextResult<std::string> read_text(const std::string& path) {
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
GreenContextError within(const GreenContextError& e, const std::string& where) {
  static const std::string kPrefix = "partition plan: ";
  std::string message = e.message();
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
  return GreenContextError(e.code(), kPrefix + where + ": " + message, e.limits(), e.closest_valid());
}

constexpr char kPlansFormat[] = "trtet-partition-plans";

json plan_to_json(const PartitionPlan& plan) {
  json root;
  root["format"] = kFormat;
  root["version"] = kPartitionPlanVersion;
  root["gpu"] = {{"name", plan.gpu.name},
                 {"sm_count", plan.gpu.sm_count},
                 {"min_partition", plan.gpu.min_partition},
                 {"alignment", plan.gpu.alignment},
                 {"granularity", plan.gpu.granularity},
                 {"max_partitioned_sms", plan.gpu.max_partitioned_sms}};
  json partitions = json::array();
  for (const PlanPartition& p : plan.partitions) {
    partitions.push_back({{"name", p.name},
                          {"sms", p.sms},
                          {"p99_target_us", p.p99_target_us},
                          {"min_calls_per_s", p.min_calls_per_s},
                          {"p99_alone_us", p.p99_alone_us},
                          {"p99_beside_us", p.p99_beside_us},
                          {"program", p.program}});
  }
  root["partitions"] = std::move(partitions);
  root["remainder"] = plan.remainder_name.empty() ? json(nullptr) : json(plan.remainder_name);
  return root;
}

// Every rule of the several-GPU format that needs no device. Empty when the plans are valid.
std::string plans_problem(const PartitionPlans& plans) {
  if (plans.devices.empty() || plans.devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return format("a several-GPU plan names 1 to %d devices, this one %zu", kMaxPlanDevices, plans.devices.size());
  }
  if (plans.one_device()) return "";
  int last = -1;
  for (std::size_t i = 0; i < plans.devices.size(); ++i) {
    const int device = plans.devices[i].device;
    if (device < 0 || device >= kMaxPlanDevices) {
      return format("devices[%zu].device is %d; it must be 0 to %d", i, device, kMaxPlanDevices - 1);
    }
    if (device <= last) {
      return device == last ? format("device %d has two plans", device)
                            : format("devices[%zu] is device %d after device %d: devices are listed in ascending order",
                                     i, device, last);
    }
    last = device;
    const std::string problem = plan_problem(plans.devices[i].plan);
    if (!problem.empty()) return format("devices[%zu] (device %d): %s", i, device, problem.c_str());
  }
  return "";
}

std::string device_list(const PartitionPlans& plans) {
  std::string text;
  for (const DevicePartitionPlan& d : plans.devices) text += (text.empty() ? "" : ", ") + std::to_string(d.device);
  return text;
}

GreenContextResult<PartitionPlans> plans_from_json(const json& root) {
  TRTET_PLAN_TRY(Reader::keys(root, "the file", {"format", "version", "devices"}, {}));
  unsigned version = 0;
  TRTET_PLAN_TRY(Reader::count(root["version"], "version", version));
  if (version != kPartitionPlansVersion) {
    return invalid(format("version %u of %s; this library reads version %d", version, kPlansFormat,
                          kPartitionPlansVersion));
  }
  const json& devices = root["devices"];
  if (!devices.is_array()) return invalid("\"devices\" must be an array");
  if (devices.empty() || devices.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
    return invalid(format("a several-GPU plan names 1 to %d devices, this one %zu", kMaxPlanDevices, devices.size()));
  }
  PartitionPlans plans;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& entry = devices[i];
    const std::string where = format("devices[%zu]", i);
    TRTET_PLAN_TRY(Reader::keys(entry, where.c_str(), {"device", "plan"}, {}));
    unsigned device = 0;
    TRTET_PLAN_TRY(Reader::count(entry["device"], where + ".device", device));
    if (device >= static_cast<unsigned>(kMaxPlanDevices)) {
      return invalid(format("%s.device is %u; it must be 0 to %d", where.c_str(), device, kMaxPlanDevices - 1));
    }
    auto plan = from_json(entry["plan"]);
    if (!plan.ok()) return within(plan.error(), format("%s (device %u).plan", where.c_str(), device));
    plans.devices.push_back({static_cast<int>(device), std::move(*plan)});
  }
  TRTET_PLAN_TRY(plans_problem(plans));
  return plans;
}

#undef TRTET_PLAN_TRY

}  // namespace

unsigned PartitionPlan::total_sms() const noexcept {
  unsigned total = 0;
  for (const PlanPartition& p : partitions) total += p.sms;
  return total;
}

GreenContextResult<PartitionPlan> parse_partition_plan(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    return from_json(*root);
  } catch (const std::exception& e) {  // nothing above should throw; a plan is never a crash
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

GreenContextResult<PartitionPlan> read_partition_plan(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return text.error();
  auto plan = parse_partition_plan(*text);
  if (!plan.ok()) {
    return GreenContextError(plan.error().code(), path + ": " + plan.error().message(), plan.error().limits(),
                             plan.error().closest_valid());
  }
  return plan;
}

GreenContextResult<std::string> partition_plan_json(const PartitionPlan& plan) {
  const std::string problem = plan_problem(plan);
  if (!problem.empty()) return invalid(problem);
  try {
    return plan_to_json(plan).dump(2) + "\n";
  } catch (const std::exception& e) {  // invalid UTF-8 in a string
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

GreenContextResult<PlanGpu> plan_gpu(int device) {
  auto limits = green_context_limits(device);
  if (!limits.ok()) return limits.error();
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, device);
  if (error != cudaSuccess) {
    return GreenContextError(GreenContextErrc::kInternal,
                             format("reading device %d's name: %s", device, cudaGetErrorString(error)), *limits);
  }
  PlanGpu gpu;
  gpu.device = device;
  gpu.name = prop.name;
  gpu.sm_count = limits->sm_count;
  gpu.min_partition = limits->min_partition;
  gpu.alignment = limits->alignment;
  gpu.granularity = limits->granularity;
  gpu.max_partitioned_sms = limits->max_partitioned_sms;
  return gpu;
}

GreenContextResult<std::vector<unsigned>> check_partition_plan(const PartitionPlan& plan, const PlanGpu& gpu) {
  const std::string problem = plan_problem(plan);
  if (!problem.empty()) return invalid(problem);
  const PlanGpu& made = plan.gpu;
  const GreenContextLimits here = limits_of(gpu, gpu.device);
  if (made.name != gpu.name || made.sm_count != gpu.sm_count || made.min_partition != gpu.min_partition ||
      made.alignment != gpu.alignment) {
    return invalid(format("it was made on %s, but this GPU is %s: the latencies it was planned on do not hold "
                          "here; make a plan on this GPU (trtet-plan)",
                          describe(made).c_str(), describe(gpu).c_str()),
                   here);
  }
  const std::vector<unsigned> counts = counts_of(plan);
  const unsigned total = plan.total_sms();
  if (total > gpu.max_partitioned_sms) {
    const green::SmGranularity g = granularity_of(gpu);
    return invalid(format("the partitions ask for %u SMs in all (%s); one split handed out %u on the GPU the plan was "
                          "made on, but only %u on this one (%s; the driver keeps each %u-SM group inside one GPC, so "
                          "GPUs of one kind can differ); closest valid request: %s",
                          total, green::format_counts(counts).c_str(), made.max_partitioned_sms,
                          gpu.max_partitioned_sms, describe(gpu).c_str(), gpu.granularity,
                          green::format_counts(green::closest_valid_counts(g, counts)).c_str()),
                   here, green::closest_valid_counts(g, counts));
  }
  if (!plan.remainder_name.empty() && total >= gpu.sm_count) {
    return invalid("a remainder is named, but the partitions take every SM of this GPU", here);
  }
  return counts;
}

GreenContext* PlannedPartitions::find(std::string_view name) noexcept {
  for (std::size_t i = 0; i < names_.size() && i < partitions_.size(); ++i) {
    if (names_[i] == name) return &partitions_[i];
  }
  return nullptr;
}

GreenContextResult<GreenContext*> PlannedPartitions::get(std::string_view name) noexcept {
  try {
    if (GreenContext* found = find(name)) return found;
    std::string known;
    for (const std::string& n : names_) known += (known.empty() ? "'" : ", '") + n + "'";
    return GreenContextError(GreenContextErrc::kInvalidArgument,
                             "no partition named '" + std::string(name.substr(0, 64)) + "' in the plan; it has " +
                                 (known.empty() ? std::string("none") : known));
  } catch (...) {
    return GreenContextError(GreenContextErrc::kInternal, "out of memory naming the plan's partitions");
  }
}

GreenContextResult<PlannedPartitions> apply_partition_plan(int device, const PartitionPlan& plan) {
  const std::string problem = plan_problem(plan);
  if (!problem.empty()) return invalid(problem);  // argument errors first, even without a GPU
  auto gpu = plan_gpu(device);
  if (!gpu.ok()) return gpu.error();
  auto counts = check_partition_plan(plan, *gpu);
  if (!counts.ok()) {
    const GreenContextError& e = counts.error();
    return GreenContextError(e.code(), e.message(), limits_of(*gpu, device), e.closest_valid());
  }
  const bool keep = !plan.remainder_name.empty();
  auto split = split_device(device, *counts, keep ? Remainder::kKeep : Remainder::kDrop);
  if (!split.ok()) return split.error();
  std::vector<std::string> names;
  for (const PlanPartition& p : plan.partitions) names.push_back(p.name);
  if (keep) names.push_back(plan.remainder_name);
  return PlannedPartitions(std::move(names), std::move(*split));
}

}  // namespace torch_tensorrt::executorch_backend

namespace torch_tensorrt::executorch_backend {

// ---- several GPUs ----

const PartitionPlan* PartitionPlans::find(int device) const noexcept {
  if (one_device()) return &devices[0].plan;
  for (const DevicePartitionPlan& d : devices) {
    if (d.device == device) return &d.plan;
  }
  return nullptr;
}

std::vector<int> PartitionPlans::device_indices() const {
  std::vector<int> indices;
  if (one_device()) return indices;
  for (const DevicePartitionPlan& d : devices) indices.push_back(d.device);
  return indices;
}

GreenContextResult<PartitionPlans> parse_partition_plans(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    const json& r = *root;
    if (!r.is_object()) return invalid("the file must be an object");
    auto format_it = r.find("format");
    if (format_it == r.end()) return invalid("the file has no \"format\"");
    if (format_it->is_string() && format_it->get_ref<const std::string&>() == kFormat) {
      auto plan = from_json(r);  // a one-device plan: for whichever device applies it
      if (!plan.ok()) return plan.error();
      PartitionPlans plans;
      plans.devices.push_back({-1, std::move(*plan)});
      return plans;
    }
    if (!format_it->is_string() || format_it->get_ref<const std::string&>() != kPlansFormat) {
      return invalid(format("\"format\" must be \"%s\" (several GPUs) or \"%s\" (one)", kPlansFormat, kFormat));
    }
    return plans_from_json(r);
  } catch (const std::exception& e) {  // nothing above should throw
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

GreenContextResult<PartitionPlans> read_partition_plans(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return text.error();
  auto plans = parse_partition_plans(*text);
  if (!plans.ok()) {
    return GreenContextError(plans.error().code(), path + ": " + plans.error().message(), plans.error().limits(),
                             plans.error().closest_valid());
  }
  return plans;
}

GreenContextResult<std::string> partition_plans_json(const PartitionPlans& plans) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: write it with partition_plan_json, or give it a device");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);
  try {
    json root;
    root["format"] = kPlansFormat;
    root["version"] = kPartitionPlansVersion;
    json devices = json::array();
    for (const DevicePartitionPlan& d : plans.devices) devices.push_back({{"device", d.device}, {"plan", plan_to_json(d.plan)}});
    root["devices"] = std::move(devices);
    return root.dump(2) + "\n";
  } catch (const std::exception& e) {
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

GreenContextResult<PartitionPlans> merge_partition_plans(const std::vector<std::pair<int, std::string>>& files) {
  try {
    if (files.empty() || files.size() > static_cast<std::size_t>(kMaxPlanDevices)) {
      return invalid(format("merging takes 1 to %d plan files, one per device; got %zu", kMaxPlanDevices, files.size()));
    }
    PartitionPlans plans;
    for (const auto& [device, path] : files) {
      if (device < 0 || device >= kMaxPlanDevices) {
        return invalid(format("device %d (%s): a device index is 0 to %d", device, path.c_str(), kMaxPlanDevices - 1));
      }
      for (const DevicePartitionPlan& d : plans.devices) {
        if (d.device == device) return invalid(format("device %d is given two plans (%s and another)", device, path.c_str()));
      }
      auto plans_read = read_partition_plans(path);
      if (!plans_read.ok()) return plans_read.error();
      if (!plans_read->one_device()) {
        return invalid(format("%s is a several-GPU plan; merging takes one-device plans (trtet-plan --device %d ...)",
                              path.c_str(), device));
      }
      plans.devices.push_back({device, std::move(plans_read->devices[0].plan)});
    }
    std::sort(plans.devices.begin(), plans.devices.end(),
              [](const DevicePartitionPlan& a, const DevicePartitionPlan& b) { return a.device < b.device; });
    const std::string problem = plans_problem(plans);
    if (!problem.empty()) return invalid(problem);
    return plans;
  } catch (const std::exception& e) {
    return invalid(std::string("merging: ") + e.what());
  }
}

GreenContextResult<std::vector<std::vector<unsigned>>> check_partition_plans(const PartitionPlans& plans,
                                                                             const std::vector<PlanGpu>& gpus) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: check it with check_partition_plan against the GPU it is for");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);
  const int count = static_cast<int>(gpus.size());
  const int highest = plans.devices.back().device;
  if (highest >= count) {
    return invalid(format("the plans are for GPUs %s (%d GPU%s at least); this machine has %d GPU%s", device_list(plans).c_str(),
                          highest + 1, highest == 0 ? "" : "s", count, count == 1 ? "" : "s"));
  }
  std::vector<std::vector<unsigned>> counts;
  for (const DevicePartitionPlan& d : plans.devices) {
    PlanGpu gpu = gpus[static_cast<std::size_t>(d.device)];
    gpu.device = d.device;
    auto checked = check_partition_plan(d.plan, gpu);
    if (!checked.ok()) {
      GreenContextError e = within(checked.error(), format("device %d", d.device));
      return GreenContextError(e.code(), e.message(), limits_of(gpu, d.device), e.closest_valid());
    }
    counts.push_back(std::move(*checked));
  }
  return counts;
}

PlannedPartitions* PlannedDevicePartitions::on(int device) noexcept {
  for (std::size_t i = 0; i < devices_.size() && i < planned_.size(); ++i) {
    if (devices_[i] == device) return &planned_[i];
  }
  return nullptr;
}

GreenContext* PlannedDevicePartitions::find(int device, std::string_view name) noexcept {
  PlannedPartitions* planned = on(device);
  return planned != nullptr ? planned->find(name) : nullptr;
}

GreenContextResult<GreenContext*> PlannedDevicePartitions::get(int device, std::string_view name) noexcept {
  try {
    PlannedPartitions* planned = on(device);
    if (planned == nullptr) {
      std::string known;
      for (int d : devices_) known += (known.empty() ? "" : ", ") + std::to_string(d);
      return GreenContextError(GreenContextErrc::kInvalidArgument,
                               format("the plans split no GPU %d; they split GPU%s %s", device,
                                      devices_.size() == 1 ? "" : "s", known.empty() ? "none" : known.c_str()));
    }
    auto found = planned->get(name);
    if (!found.ok()) {
      return GreenContextError(found.error().code(), format("GPU %d: %s", device, found.error().message().c_str()));
    }
    return *found;
  } catch (...) {
    return GreenContextError(GreenContextErrc::kInternal, "out of memory naming the plans' partitions");
  }
}

GreenContextResult<PlannedDevicePartitions> apply_partition_plans(const PartitionPlans& plans) {
  if (plans.one_device()) {
    return invalid("a one-device plan names no device: apply it with apply_partition_plan(device, plan)");
  }
  const std::string problem = plans_problem(plans);
  if (!problem.empty()) return invalid(problem);  // argument errors first, even without a GPU
  // The device count, and nothing else of CUDA, before it is known that every device exists.
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  const int highest = plans.devices.back().device;
  if (highest >= count) {
    const std::string why = counted != cudaSuccess ? format(" (cudaGetDeviceCount: %s)", cudaGetErrorString(counted)) : "";
    return GreenContextError(count == 0 ? GreenContextErrc::kNoDevice : GreenContextErrc::kInvalidArgument,
                             format("partition plan: the plans are for GPUs %s (%d GPU%s at least); this machine has %d "
                                    "GPU%s%s",
                                    device_list(plans).c_str(), highest + 1, highest == 0 ? "" : "s", count,
                                    count == 1 ? "" : "s", why.c_str()));
  }
  // Every named device's shape, before any split.
  std::vector<PlanGpu> gpus(static_cast<std::size_t>(count));  // devices the plans do not name stay unread
  for (const DevicePartitionPlan& d : plans.devices) {
    auto gpu = plan_gpu(d.device);
    if (!gpu.ok()) return within(gpu.error(), format("device %d", d.device));
    gpus[static_cast<std::size_t>(d.device)] = std::move(*gpu);
  }
  auto counts = check_partition_plans(plans, gpus);
  if (!counts.ok()) return counts.error();
  std::vector<int> devices;
  std::vector<PlannedPartitions> planned;
  for (std::size_t i = 0; i < plans.devices.size(); ++i) {
    const DevicePartitionPlan& d = plans.devices[i];
    const bool keep = !d.plan.remainder_name.empty();
    auto split = split_device(d.device, (*counts)[i], keep ? Remainder::kKeep : Remainder::kDrop);
    if (!split.ok()) return within(split.error(), format("device %d", d.device));  // the earlier splits go with `planned`
    std::vector<std::string> names;
    for (const PlanPartition& p : d.plan.partitions) names.push_back(p.name);
    if (keep) names.push_back(d.plan.remainder_name);
    devices.push_back(d.device);
    planned.emplace_back(std::move(names), std::move(*split));
  }
  return PlannedDevicePartitions(std::move(devices), std::move(planned));
}

}  // namespace torch_tensorrt::executorch_backend
