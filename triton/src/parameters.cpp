#include "parameters.h"

#include "errors.h"

namespace trtet_triton {

// ---- the model's parameters (Note [model parameters], parameters.h) ----

namespace {

TRITONSERVER_Error* parse_unsigned(const std::string& key, const std::string& text, unsigned max, unsigned& out,
                                   const char* what = "SMs", unsigned min = 1) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("parameter '%s' is '%s'; it takes a whole number of %s", key.c_str(), text.c_str(), what));
  }
  const unsigned long value = std::stoul(text);
  if (value < min || value > max) {
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("parameter '%s' is %lu; it takes %u to %u", key.c_str(), value, min, max));
  }
  out = static_cast<unsigned>(value);
  return nullptr;
}

}  // namespace

bool parse_stream_priority(const std::string& text, StreamPriority& out) {
  if (text == "PRIORITY_MAX") out = StreamPriority::kMax;
  else if (text == "PRIORITY_MIN") out = StreamPriority::kMin;
  else if (text == "PRIORITY_DEFAULT") out = StreamPriority::kDefault;
  else return false;
  return true;
}

const char* stream_priority_name(StreamPriority priority) {
  switch (priority) {
    case StreamPriority::kMax: return "PRIORITY_MAX";
    case StreamPriority::kMin: return "PRIORITY_MIN";
    default: return "PRIORITY_DEFAULT";
  }
}

TRITONSERVER_Error* parse_parameters(const Json& config, const std::string& model_name, Parameters& out) {
  out.plan_partition = model_name;
  // Triton's own optimization.priority (an enum it has checked; read here as its name).
  auto optimization = config.find("optimization");
  if (optimization != config.end() && optimization->is_object()) {
    auto priority = optimization->find("priority");
    if (priority != optimization->end() && !priority->is_null()) {
      const std::string text = priority->is_string() ? priority->get<std::string>() : priority->dump();
      if (!parse_stream_priority(text, out.priority)) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("optimization.priority is %s; it takes PRIORITY_DEFAULT, PRIORITY_MAX or PRIORITY_MIN",
                            text.substr(0, 64).c_str()));
      }
    }
  }
  auto it = config.find("parameters");
  if (it == config.end() || it->is_null()) return nullptr;
  if (!it->is_object()) return error(TRITONSERVER_ERROR_INVALID_ARG, "the config's 'parameters' is not a map");
  std::vector<std::string> unknown;
  bool partition_named = false;
  for (const auto& [key, entry] : it->items()) {
    if (!entry.is_object() || !entry.contains("string_value") || !entry["string_value"].is_string()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("parameter '%s' has no string_value", key.c_str()));
    }
    const std::string value = entry["string_value"].get<std::string>();
    if (value.size() > 4096) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("parameter '%s' is longer than 4096 bytes", key.c_str()));
    }
    if (key == "sms") {
      unsigned n = 0;
      TRTET_TRITON_RETURN_IF_ERROR(parse_unsigned(key, value, 65536, n));
      out.sms = n;
    } else if (key.rfind("sms.", 0) == 0 && key.size() > 4) {
      unsigned n = 0;
      TRTET_TRITON_RETURN_IF_ERROR(parse_unsigned(key, value, 65536, n));
      out.group_sms[key.substr(4)] = n;
    } else if (key == "plan_file") {
      out.plan_file = value;
    } else if (key.rfind("plan_file.", 0) == 0 && key.size() > 10) {
      const std::string device = key.substr(10);
      if (device.size() > 4 || device.find_first_not_of("0123456789") != std::string::npos) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("parameter '%s': '%s' is not a device index", key.c_str(), device.c_str()));
      }
      out.device_plan_file[std::stoi(device)] = value;
    } else if (key == "plan_partition") {
      out.plan_partition = value;
      partition_named = true;
    } else if (key == "method") {
      out.method = value;
    } else if (key == "stream_wait") {
      if (!parse_stream_wait(value, out.stream_wait)) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("parameter 'stream_wait' is '%s'; it takes sync, spin, yield or callback", value.c_str()));
      }
    } else if (key == "send_from") {
      if (value == "instance") {
        out.send_from = SendFrom::kInstance;
      } else if (value == "completion_thread") {
        out.send_from = SendFrom::kCompletionThread;
      } else {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("parameter 'send_from' is '%s'; it takes instance or completion_thread", value.c_str()));
      }
    } else if (key == "gpu_time_every") {
      TRTET_TRITON_RETURN_IF_ERROR(parse_unsigned(key, value, 1000000, out.gpu_time_every, "requests", 0));
    } else if (key == "use_cuda_graphs" || key == "cuda_graph_cache_size" || key == "staging_budget_mb" ||
               key == "weight_streaming_budget") {
      out.load_options.emplace_back(key, value);
    } else if (key == "tensorrt_runtime" || key == "allow_engine_host_code") {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("parameter '%s' chooses which code the server runs, which a model's config may not; set it "
                          "in the server's environment (docs/SERVING.md)",
                          key.c_str()));
    } else {
      std::string why;
      if (!read_set_parameter(key, value, out.set, why)) {
        unknown.push_back(key);
      } else if (!why.empty()) {
        return error(TRITONSERVER_ERROR_INVALID_ARG, why);
      }
    }
  }
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& k : unknown) names += (names.empty() ? "'" : ", '") + k + "'";
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 format("unknown parameter%s %s; the backend takes sms, sms.<group>, plan_file, plan_file.<device>, "
                        "plan_partition, plan_set_file, plan_set_model, slo_p99_us, slo_min_rate, slo_window_s, slo_interval_ms, "
                        "slo_margin, slo_confirm, slo_dwell_s, slo_min_samples, method, gpu_time_every, stream_wait, "
                        "send_from, use_cuda_graphs, cuda_graph_cache_size, staging_budget_mb, weight_streaming_budget",
                        unknown.size() > 1 ? "s" : "", names.c_str()));
  }
  std::string other;
  if (out.plan_file.has_value() || !out.device_plan_file.empty()) other = "a plan file (plan_file)";
  else if (out.sms.has_value() || !out.group_sms.empty()) other = "SM counts (sms)";
  else if (partition_named) other = "a plan partition (plan_partition)";
  const std::string set_problem = check_set_parameters(out.set, other);
  if (!set_problem.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, set_problem);
  if (out.set.file.has_value() && !out.set.model.has_value()) out.set.model = model_name;
  if (out.sms.has_value() || !out.group_sms.empty()) {
    if (out.plan_file.has_value() || !out.device_plan_file.empty()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "the parameters give both SM counts (sms) and a plan file (plan_file): give one");
    }
  }
  return nullptr;
}

}  // namespace trtet_triton
