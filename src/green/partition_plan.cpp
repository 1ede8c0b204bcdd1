// The partition-plan file (torch_tensorrt/executorch/PartitionPlan.h): parsing untrusted JSON,
// checking a plan against a GPU without touching it, and applying it through split_device. The
// several-GPU file that wraps these plans is in partition_plans.cpp.
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "green/partition_plan_rules.h"
#include "green/plan_json.h"
#include "green/split_plan.h"

namespace torch_tensorrt::executorch_backend {
namespace green::plan_json {
namespace {

constexpr std::size_t kMaxPlanBytes = 1 << 20;
constexpr int kMaxDepth = 8;

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

}  // namespace

Result<PartitionPlan> plan_from_json(const json& root) {
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

}  // namespace green::plan_json

using namespace green::plan_rules;  // the format's rules (partition_plan_rules.h)
using namespace green::plan_json;   // the JSON side (plan_json.h)

unsigned PartitionPlan::total_sms() const noexcept {
  unsigned total = 0;
  for (const PlanPartition& p : partitions) total += p.sms;
  return total;
}

Result<PartitionPlan> parse_partition_plan(std::string_view text) {
  auto root = parse_checked(text);
  if (!root.ok()) return root.error();
  try {
    return plan_from_json(*root);
  } catch (const std::exception& e) {  // nothing above should throw; a plan is never a crash
    return invalid(std::string("cannot be read: ") + e.what());
  }
}

Result<PartitionPlan> read_partition_plan(const std::string& path) {
  auto text = read_text(path);
  if (!text.ok()) return text.error();
  auto plan = parse_partition_plan(*text);
  if (!plan.ok()) {
    return Error(plan.error().code(), path + ": " + plan.error().message(), plan.error().limits(),
                             plan.error().closest_valid());
  }
  return plan;
}

Result<std::string> partition_plan_json(const PartitionPlan& plan) {
  const std::string problem = plan_problem(plan);
  if (!problem.empty()) return invalid(problem);
  try {
    return plan_to_json(plan).dump(2) + "\n";
  } catch (const std::exception& e) {  // invalid UTF-8 in a string
    return invalid(std::string("cannot be written as JSON: ") + e.what());
  }
}

Result<PlanGpu> plan_gpu(int device) {
  auto limits = green_context_limits(device);
  if (!limits.ok()) return limits.error();
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, device);
  if (error != cudaSuccess) {
    return Error(ErrorCode::kInternal, format("reading device %d's name: %s", device, cudaGetErrorString(error)));
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

Result<std::vector<unsigned>> check_partition_plan(const PartitionPlan& plan, const PlanGpu& gpu) {
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

Result<GreenContext*> PlannedPartitions::get(std::string_view name) noexcept {
  try {
    for (std::size_t i = 0; i < names_.size() && i < partitions_.size(); ++i) {
      if (names_[i] == name) return &partitions_[i];
    }
    std::string known;
    for (const std::string& n : names_) known += (known.empty() ? "'" : ", '") + n + "'";
    return Error(ErrorCode::kInvalidArgument,
                             "no partition named '" + std::string(name.substr(0, 64)) + "' in the plan; it has " +
                                 (known.empty() ? std::string("none") : known));
  } catch (...) {
    return Error(ErrorCode::kInternal, "out of memory naming the plan's partitions");
  }
}

std::vector<GreenContext> PlannedPartitions::release() && noexcept {
  std::vector<GreenContext> taken = std::move(partitions_);
  partitions_.clear();
  names_.clear();
  return taken;
}

Result<PlannedPartitions> apply_partition_plan(int device, const PartitionPlan& plan) {
  const std::string problem = plan_problem(plan);
  if (!problem.empty()) return invalid(problem);  // argument errors first, even without a GPU
  auto gpu = plan_gpu(device);
  if (!gpu.ok()) return gpu.error();
  auto counts = check_partition_plan(plan, *gpu);
  if (!counts.ok()) {
    const Error& e = counts.error();
    return Error(e.code(), e.message(), limits_of(*gpu, device), e.closest_valid());
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
