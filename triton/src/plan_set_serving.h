// A plan set served on one device: its partitions, the models that follow it, its controller's
// thread and its metrics (plan_set_serving.cpp). One per device per server, held by the device's
// split (device_split.h) and made with the first model that names the set.
#pragma once

#include <torch_tensorrt/executorch/PlanSet.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "errors.h"
#include "set_follower.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// Note [plan set metrics]
// -----------------------
// On Triton's metrics endpoint, beside the engines' GPU time:
//   trtet_plan_set_plan       gauge, one series per model following a set (labels model, gpu): the
//                             index in the set of the plan the model's next call runs on
//   trtet_plan_set_switches   counter per set (label gpu): the switches its controller made
//   trtet_plan_set_infeasible gauge per set (label gpu): 1 while no plan meets every target, else 0
// Made with the backend (TRITONBACKEND_Initialize); a server without metrics has none, and the
// log still carries every switch.
void make_plan_set_metric_families();
void delete_plan_set_metric_families();

class SetServing {
 public:
  // `parts` made from `set` on `device` (apply_plan_set); starts the controller's thread.
  SetServing(int device, std::string path, std::string text, const et::PlanSet& set, et::PlanSetPartitions parts,
             SetControl control);
  // Stops the thread, then the metrics go; the partitions last (they wait for their streams).
  ~SetServing();
  // Stops the controller's thread and hands the partitions over, for a later load of the same set
  // (Note [keeping a split for the next load]); nothing may call stream() after it.
  et::PlanSetPartitions take_partitions();
  SetServing(const SetServing&) = delete;
  SetServing& operator=(const SetServing&) = delete;

  // A model starts following the set as `set_model`, with its target or none; refused (nothing
  // changes) where the controller refuses the targets together.
  TRITONSERVER_Error* join(const std::string& model, const std::string& set_model, std::optional<slo::Target> target);
  // The model stops following it (its unload): its target and its series go.
  void leave(const std::string& model);

  // The current plan's stream for `set_model`: where the model's next call runs.
  et::Result<cudaStream_t> stream(const std::string& set_model) const { return parts_.stream(set_model); }
  // What the plan set's controller is fed (Note [following the load]).
  void add_sample(std::optional<std::size_t> index, double latency_us, double time_s) {
    if (index.has_value()) follower_.add(*index, latency_us, time_s);
  }
  std::optional<std::size_t> model_index(const std::string& set_model) const { return follower_.model_index(set_model); }
  // "<n> SMs of plan '<p>'" for `set_model` now (the instance's log line).
  std::string where(const std::string& set_model) const;

  int device() const noexcept { return device_; }
  const std::string& path() const noexcept { return path_; }
  const std::string& text() const noexcept { return text_; }
  const SetControl& control() const noexcept { return follower_.control(); }

 private:
  struct Member {
    std::string set_model;
    std::optional<slo::Target> target;
    TRITONSERVER_Metric* plan_gauge = nullptr;
  };
  void run();
  void stop();  // the controller's thread stopped and joined (once)
  void retarget_locked();  // the controller again with the members' targets (apply_mutex_ held)
  void apply(const LoadFollower::Tick& tick);
  std::size_t plan_index(const std::string& plan) const;
  void set_gauges_locked();

  const int device_;
  const std::string path_;
  const std::string text_;
  et::PlanSetPartitions parts_;  // destroyed last
  LoadFollower follower_;
  mutable std::mutex apply_mutex_;  // a tick and its switch, against a model's join or leave
  std::map<std::string, Member> members_;
  TRITONSERVER_Metric* switches_ = nullptr;
  TRITONSERVER_Metric* infeasible_ = nullptr;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;  // started last
};

}  // namespace trtet_triton
