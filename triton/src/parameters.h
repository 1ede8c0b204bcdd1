// The model's parameters: the config's `parameters` map (parameters.cpp).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "set_parameters.h"
#include "trtet_triton/triton_api.h"
#include "wait.h"

namespace trtet_triton {

using Json = nlohmann::json;

// Note [model parameters]
// -----------------------
// The config's `parameters` map, every value a string_value. Keys:
//   sms                 SMs of each KIND_GPU instance's partition (a split of the model's own)
//   sms.<group>         the same for the instance group named <group> (overrides `sms`)
//   plan_file           a trtet-plan plan file (docs/PLANNING.md), relative to the model's directory:
//                       every device the model's instances are on is split as it says, once for the
//                       whole server; models naming the same plan share that split. A plan for any
//                       device (trtet-plan's) is applied to each of those devices; a plan naming its
//                       devices (trtet-plan --merge) gives each device its own, and is checked
//                       against every GPU it names (count and shape) before any split
//   plan_file.<d>       the plan for device <d> (overrides plan_file there)
//   plan_partition      the plan's partition this model's instances take (default: the model's name);
//                       with several instances on one device, <name>_<k> for the k-th (0, 1, ...)
//   plan_set_file, plan_set_model, slo_*
//                       a plan set the model's instances follow, its name there, its p99 target and
//                       the set's controller (Note [plan set parameters], set_parameters.h)
//   method              the program's method (default "forward")
//   gpu_time_every      one request in N has its engine's GPU time measured (CUDA events around the
//                       engine and its copies; Note [engine GPU time]), the first included: 1 times
//                       every request, 0 none (default 16: the events cost the requests they time)
//   stream_wait         how an instance waits for its stream after a call: sync (default), spin,
//                       yield or callback (Note [waiting for the stream], wait.h)
//   send_from           where each response is sent, its statistics reported and its request released:
//                       instance (default: the instance's thread, before it takes the next request) or
//                       completion_thread (a thread of the instance's own, so the instance takes the
//                       next request at once; Note [sending from a completion thread], completion.h)
//   use_cuda_graphs, cuda_graph_cache_size, staging_budget_mb, weight_streaming_budget
//                       the delegate's load-time options (docs/DESIGN.md), passed as given: the
//                       delegate checks their values
// Besides the map, the config's `optimization { priority: ... }` (Triton's own field):
// PRIORITY_MAX gives an instance on the whole GPU a stream of CUDA's highest priority, so its
// kernels' blocks are dispatched ahead of other streams' waiting blocks; PRIORITY_MIN the lowest
// (CUDA's default).
// A partition's stream keeps the default priority (the partition's SMs are the model's own; the
// load logs that the setting was not applied there).
// Anything else fails the load naming the key. The options that choose which code runs
// (tensorrt_runtime, allow_engine_host_code) are refused here with that reason: the config is
// untrusted input; they belong to the server's environment.
// No parameter: every instance runs on the whole GPU (Triton's usual way).

enum class StreamPriority { kDefault, kMax, kMin };
enum class SendFrom { kInstance, kCompletionThread };

/// "PRIORITY_MAX", "PRIORITY_MIN" or "PRIORITY_DEFAULT" into `out`; false for anything else.
bool parse_stream_priority(const std::string& text, StreamPriority& out);
const char* stream_priority_name(StreamPriority priority);

struct Parameters {
  std::optional<unsigned> sms;
  std::map<std::string, unsigned> group_sms;
  std::optional<std::string> plan_file;
  std::map<int, std::string> device_plan_file;
  std::string plan_partition;
  SetParameters set;  // plan_set_file and the keys that go with it
  std::string method = "forward";
  unsigned gpu_time_every = 16;
  StreamWait stream_wait = StreamWait::kSync;
  SendFrom send_from = SendFrom::kInstance;
  StreamPriority priority = StreamPriority::kDefault;  // the config's optimization.priority
  std::vector<std::pair<std::string, std::string>> load_options;  // key, value
};

TRITONSERVER_Error* parse_parameters(const Json& config, const std::string& model_name, Parameters& out);

}  // namespace trtet_triton
