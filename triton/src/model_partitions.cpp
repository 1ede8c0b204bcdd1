#include "model_partitions.h"

#include "model_plan_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace trtet_triton {

namespace {

std::string split_message(const et::Error& e) {
  std::string text = e.message();
  if (!e.closest_valid().empty()) {
    text += " (closest request the GPU accepts:";
    for (unsigned v : e.closest_valid()) text += " " + std::to_string(v);
    text += ")";
  }
  return text;
}

}  // namespace

std::string read_file_text(const std::string& path, std::string& why) {
  // Opened without blocking (a FIFO's open waits for a writer otherwise), then refused unless it is a
  // regular file: a config naming a FIFO or a device must not hold the model's load forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    why = format("cannot open %s: %s", path.c_str(), std::strerror(errno));
    return {};
  }
  struct stat facts {};
  if (::fstat(fd, &facts) != 0 || !S_ISREG(facts.st_mode)) {
    why = format("%s is not a regular file", path.c_str());
    ::close(fd);
    return {};
  }
  if (facts.st_size > static_cast<off_t>(kMaxConfigFileBytes)) {
    why = format("%s is larger than 1 MiB", path.c_str());
    ::close(fd);
    return {};
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = format("reading %s: %s", path.c_str(), std::strerror(errno));
      text.clear();
      break;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigFileBytes) {  // grown since the fstat
      why = format("%s is larger than 1 MiB", path.c_str());
      text.clear();
      break;
    }
  }
  ::close(fd);
  return text;
}

// Reads and checks every plan file the parameters name (no GPU needed): a missing file or a plan that
// does not parse is refused here, on any machine.
TRITONSERVER_Error* read_plans(ModelState& state, const std::string& model_dir) {
  std::vector<std::string> names;
  if (state.parameters.plan_file.has_value()) names.push_back(*state.parameters.plan_file);
  for (const auto& [device, name] : state.parameters.device_plan_file) names.push_back(name);
  for (const std::string& name : names) {
    if (state.plans.count(name) != 0) continue;
    std::filesystem::path path(name);
    if (path.is_relative()) path = std::filesystem::path(model_dir) / path;
    std::string why;
    std::string text = read_file_text(path.string(), why);
    if (!why.empty()) return error(TRITONSERVER_ERROR_INVALID_ARG, "plan_file: " + why);
    // A plan for any device or one naming each device (every format parse_partition_plan reads).
    auto plan = et::parse_partition_plan(text);
    if (!plan.ok()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, format("plan file %s: %s", path.c_str(), plan.error().message().c_str()));
    }
    state.plans[name] = ModelState::Plan{path.string(), std::move(text), std::move(*plan)};
  }
  return nullptr;
}

// Every plan file naming its devices that the model names, against the whole machine before any
// split: the machine has every GPU the file names (checked with the device count alone, so a machine
// with no GPU hears the file's reason), and each of those GPUs has the shape its plan was made on.
TRITONSERVER_Error* check_device_plans(const ModelState& state, int gpus, const std::string& why) {
  for (const auto& [name, read] : state.plans) {
    if (read.plan.any_device()) continue;
    const int highest = read.plan.devices.back().device;
    std::string problem;
    if (highest >= gpus) {
      std::string named;
      for (int d : read.plan.device_indices()) named += (named.empty() ? "" : ", ") + std::to_string(d);
      problem = format("partition plan: the plan is for GPU%s %s (%d GPU%s at least); this machine has %d GPU%s",
                       read.plan.devices.size() == 1 ? "" : "s", named.c_str(), highest + 1, highest == 0 ? "" : "s",
                       gpus, gpus == 1 ? "" : "s");
    } else {
      std::vector<et::PlanGpu> machine;
      for (const et::DevicePlan& d : read.plan.devices) {
        auto gpu = et::plan_gpu(d.device);
        if (!gpu.ok()) {
          return error(triton_code(gpu.error().code()),
                       format("plan file %s: reading GPU %d: %s", read.path.c_str(), d.device, gpu.error().message().c_str()));
        }
        machine.push_back(std::move(*gpu));
      }
      auto checked = et::check_partition_plan(read.plan, machine);
      if (!checked.ok()) problem = split_message(checked.error());
    }
    if (!problem.empty()) {
      return error(gpus == 0 ? TRITONSERVER_ERROR_UNSUPPORTED : TRITONSERVER_ERROR_INVALID_ARG,
                   format("plan file %s: %s%s", read.path.c_str(), problem.c_str(),
                          gpus == 0 ? (" (" + why + ")").c_str() : ""));
    }
  }
  return nullptr;
}

// Takes (or makes) each device's split for the model's instances.
TRITONSERVER_Error* acquire_partitions(ModelState& state) {
  if (state.plan_set.has_value()) return acquire_plan_set(state);  // model_plan_set.cpp
  std::map<int, std::vector<InstancePlace*>> by_device;
  for (InstancePlace& place : state.places) by_device[place.device].push_back(&place);
  const Parameters& params = state.parameters;
  for (auto& [device, places] : by_device) {
    std::optional<std::string> plan_path;
    if (auto p = params.device_plan_file.find(device); p != params.device_plan_file.end()) {
      plan_path = p->second;
    } else if (params.plan_file.has_value()) {
      plan_path = params.plan_file;
    }
    if (plan_path.has_value()) {
      const ModelState::Plan& read = state.plans.at(*plan_path);
      const std::filesystem::path path(read.path);
      const std::string& text = read.text;
      const et::DevicePlan* plan = read.plan.find(device);
      if (plan == nullptr) {
        std::string named;
        for (int d : read.plan.device_indices()) named += (named.empty() ? "" : ", ") + std::to_string(d);
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     format("plan file %s has no plan for GPU %d, where model '%s' has instances (it has plans for "
                            "GPU%s %s)",
                            path.c_str(), device, state.name.c_str(), named.find(',') == std::string::npos ? "" : "s",
                            named.c_str()));
      }
      // The partitions this model's instances on this device take: one by the partition's name, or
      // <name>_<k> for each of several.
      for (std::size_t k = 0; k < places.size(); ++k) {
        places[k]->plan_partition = places.size() == 1 ? params.plan_partition : format("%s_%zu", params.plan_partition.c_str(), k);
        bool found = plan->remainder_name == places[k]->plan_partition;
        for (const auto& part : plan->partitions) found = found || part.name == places[k]->plan_partition;
        if (!found) {
          std::string names;
          for (const auto& part : plan->partitions) names += (names.empty() ? "" : ", ") + part.name;
          if (!plan->remainder_name.empty()) names += ", " + plan->remainder_name + " (the remainder)";
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("plan file %s has no partition '%s' for instance %zu on GPU %d (it has %s)", path.c_str(),
                              places[k]->plan_partition.c_str(), k, device, names.c_str()));
        }
      }
      const std::string kept_key = "plan\n" + text;  // Note [keeping a split for the next load]
      std::lock_guard<std::mutex> lock(g_splits_mutex);
      std::shared_ptr<DeviceSplit> split;
      auto existing = g_splits.find(device);
      if (existing != g_splits.end()) {
        split = existing->second;
        if (split->plan_text != text || split->plan_text.empty() || split->set != nullptr) {
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("GPU %d is already split by %s; one split per device: every model on it must name the "
                              "same plan file (a second split would share SMs)",
                              device, split->owner.c_str()));
        }
      } else if ((split = take_kept_split(device, kept_key)) != nullptr) {
        split->owner = "plan " + path.string();  // Note [keeping a split for the next load]
        g_splits[device] = split;
        log(TRITONSERVER_LOG_INFO, format("GPU %d: the partitions of plan %s are an earlier load's, kept for this one",
                                          device, path.c_str()));
      } else {
        auto parts = et::apply_partition_plan(read.plan, device);
        if (!parts.ok()) {
          return error(triton_code(parts.error().code()),
                       format("plan file %s on GPU %d: %s", path.c_str(), device, split_message(parts.error()).c_str()));
        }
        split = std::make_shared<DeviceSplit>();
        split->device = device;
        split->owner = "plan " + path.string();
        split->plan_text = text;
        split->key = kept_key;
        split->planned = std::move(*parts);
        g_splits[device] = split;
      }
      for (InstancePlace* place : places) {
        auto taken = split->taken.find(place->plan_partition);
        if (taken != split->taken.end()) {
          if (split->models == 0) g_splits.erase(device);
          return error(TRITONSERVER_ERROR_INVALID_ARG,
                       format("partition '%s' of the plan on GPU %d is already taken by %s",
                              place->plan_partition.c_str(), device, taken->second.c_str()));
        }
      }
      for (InstancePlace* place : places) {
        split->taken[place->plan_partition] = format("model '%s'", state.name.c_str());
        state.partitions_taken[device].push_back(place->plan_partition);
      }
      ++split->models;
      state.splits[device] = split;
      continue;
    }
    std::vector<unsigned> counts;
    for (InstancePlace* place : places) {
      if (place->sms != 0) {
        place->partition_index = static_cast<int>(counts.size());
        counts.push_back(place->sms);
      }
    }
    if (counts.empty()) continue;  // whole GPU
    std::lock_guard<std::mutex> lock(g_splits_mutex);
    auto existing = g_splits.find(device);
    if (existing != g_splits.end()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   format("GPU %d is already split by %s; one split per device: give every model's partition in one "
                          "plan file (plan_file) instead of sms",
                          device, existing->second->owner.c_str()));
    }
    std::string asked;
    for (unsigned c : counts) asked += (asked.empty() ? "" : ", ") + std::to_string(c);
    const std::string kept_key = "sms " + asked;
    std::shared_ptr<DeviceSplit> split = take_kept_split(device, kept_key);
    if (split != nullptr) {  // Note [keeping a split for the next load]
      log(TRITONSERVER_LOG_INFO, format("GPU %d: the partitions of %s SMs are an earlier load's, kept for model '%s'",
                                        device, asked.c_str(), state.name.c_str()));
    } else {
      auto parts = et::split_device(device, counts, et::Remainder::kDrop);
      if (!parts.ok()) {
        return error(triton_code(parts.error().code()),
                     format("partitions of %s SMs on GPU %d: %s", asked.c_str(), device, split_message(parts.error()).c_str()));
      }
      split = std::make_shared<DeviceSplit>();
      split->device = device;
      split->key = kept_key;
      split->own = std::move(*parts);
    }
    split->owner = format("model '%s' (sms)", state.name.c_str());
    split->models = 1;
    g_splits[device] = split;
    state.splits[device] = split;
  }
  return nullptr;
}

}  // namespace trtet_triton
