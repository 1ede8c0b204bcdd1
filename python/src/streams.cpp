// Streams, the caller-stream guard and green-context partitions.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/PartitionPlan.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common.h"

namespace trtet_py {

namespace {

// The partitions' streams by handle: an output allocated on a partition's stream keeps the
// partition alive (its memory is freed on that stream), however the stream was selected (a
// partition's Stream, or a torch ExternalStream over its handle).
std::mutex g_partition_streams_mu;
std::unordered_map<std::uintptr_t, std::weak_ptr<et::GreenContext>> g_partition_streams;

void register_stream(cudaStream_t s, const std::shared_ptr<et::GreenContext>& ctx) {
  std::lock_guard<std::mutex> lock(g_partition_streams_mu);
  if (g_partition_streams.size() > 1024) {
    for (auto it = g_partition_streams.begin(); it != g_partition_streams.end();)
      it = it->second.expired() ? g_partition_streams.erase(it) : std::next(it);
  }
  g_partition_streams[reinterpret_cast<std::uintptr_t>(s)] = ctx;
}

void register_partition(const std::shared_ptr<et::GreenContext>& ctx) {
  if (!ctx || !*ctx) return;
  for (cudaStream_t s : ctx->streams()) register_stream(s, ctx);
}

/// A stream handle as Python sees it: __cuda_stream__ and an int. `owner` keeps the partition that
/// owns the stream alive (null for a stream the caller owns).
struct Stream {
  std::uintptr_t handle = 0;
  std::shared_ptr<et::GreenContext> owner;
};

/// One scope of CudaStreamGuard, entered and exited by the Python context manager. Guards of a
/// thread nest: each must be exited on the thread that entered it, innermost first.
class StreamGuard {
 public:
  StreamGuard(std::uintptr_t handle, nb::object object) : handle_(handle), object_(std::move(object)) {}
  ~StreamGuard() {
    // A guard dropped while entered (never exited): leave the selection as it is on its own thread
    // rather than restoring from another one; the stack entry goes when that thread exits it.
    if (guard_ && owner_ == std::this_thread::get_id()) pop_if_top();
  }

  void enter() {
    if (guard_) raise(et::ErrorCode::kInvalidState, "this stream guard is already entered; make one per `with`");
    guard_ = std::make_unique<et::CudaStreamGuard>(reinterpret_cast<cudaStream_t>(handle_));
    owner_ = std::this_thread::get_id();
    stack().push_back(this);
  }

  void exit() {
    if (!guard_) raise(et::ErrorCode::kInvalidState, "this stream guard is not entered");
    if (owner_ != std::this_thread::get_id())
      raise(et::ErrorCode::kInvalidState, "a stream guard must be exited on the thread that entered it");
    if (stack().empty() || stack().back() != this)
      raise(et::ErrorCode::kInvalidState, "stream guards must be exited innermost first");
    pop_if_top();
  }

  std::uintptr_t handle() const { return handle_; }
  bool entered() const { return static_cast<bool>(guard_); }
  const nb::object& object() const { return object_; }

  static std::vector<StreamGuard*>& stack() {
    thread_local std::vector<StreamGuard*> s;
    return s;
  }

 private:
  void pop_if_top() {
    if (!stack().empty() && stack().back() == this) {
      stack().pop_back();
      guard_.reset();  // restores the previous selection
    }
  }

  std::uintptr_t handle_;
  nb::object object_;  // what the caller selected (a torch or cupy stream, a partition's Stream, an int)
  std::unique_ptr<et::CudaStreamGuard> guard_;
  std::thread::id owner_;
};

/// A partition as Python holds it (shared: its streams keep it alive).
struct Partition {
  std::shared_ptr<et::GreenContext> ctx;
  std::string name;

  et::GreenContext& get() const {
    if (!ctx || !*ctx) raise(et::ErrorCode::kInvalidState, "this partition was closed");
    return *ctx;
  }
};

}  // namespace

nb::object selected_stream_object(std::uintptr_t handle) {
  const auto& stack = StreamGuard::stack();
  if (stack.empty() || stack.back()->handle() != handle || !stack.back()->object().is_valid()) return nb::none();
  return stack.back()->object();
}

std::shared_ptr<void> stream_owner(std::uintptr_t handle) {
  std::lock_guard<std::mutex> lock(g_partition_streams_mu);
  auto found = g_partition_streams.find(handle);
  if (found == g_partition_streams.end()) return nullptr;
  return found->second.lock();
}

nb::dict limits_dict(const et::GreenContextLimits& l, bool with_device) {
  nb::dict d;
  if (with_device) d["device"] = l.device;
  d["sm_count"] = l.sm_count;
  d["min_partition"] = l.min_partition;
  d["alignment"] = l.alignment;
  d["granularity"] = l.granularity;
  d["max_partitioned_sms"] = l.max_partitioned_sms;
  return d;
}

namespace {

std::vector<Partition> wrap(std::vector<et::GreenContext> parts, const std::vector<std::string>& names) {
  std::vector<Partition> out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out.push_back(Partition{std::make_shared<et::GreenContext>(std::move(parts[i])), i < names.size() ? names[i] : ""});
    register_partition(out.back().ctx);
  }
  return out;
}

}  // namespace

void bind_streams(nb::module_& m) {
  nb::class_<Stream>(m, "Stream", "A CUDA stream handle: int(s) is the cudaStream_t, s.__cuda_stream__() the CUDA "
                                  "stream protocol's (0, handle). A partition's streams keep the partition alive.")
      .def(nb::init<>())
      .def("__init__", [](Stream* s, std::uintptr_t handle) { new (s) Stream{handle, nullptr}; }, nb::arg("handle"))
      .def_prop_ro("handle", [](const Stream& s) { return s.handle; }, "The cudaStream_t as an int.")
      .def("__int__", [](const Stream& s) { return s.handle; })
      .def("__index__", [](const Stream& s) { return s.handle; })
      .def("__cuda_stream__", [](const Stream& s) { return nb::make_tuple(0, s.handle); },
           "The CUDA stream protocol: (version 0, the handle).")
      .def("__eq__", [](const Stream& a, const Stream& b) { return a.handle == b.handle; })
      .def("__hash__", [](const Stream& s) { return static_cast<std::size_t>(s.handle); })
      .def("synchronize", [](const Stream& s) {
        cudaError_t e;
        {
          nb::gil_scoped_release release;
          e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(s.handle));
        }
        if (e != cudaSuccess) {
          (void)cudaGetLastError();
          raise(e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? et::ErrorCode::kNoDevice
                                                                            : et::ErrorCode::kInternal,
                std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
        }
      }, "Waits (GIL released) for the work queued on the stream.")
      .def("__repr__", [](const Stream& s) {
        char text[64];
        std::snprintf(text, sizeof text, "<torchtrt_executorch.Stream 0x%llx>", static_cast<unsigned long long>(s.handle));
        return std::string(text);
      });

  nb::class_<StreamGuard>(m, "_StreamGuard")
      .def(nb::init<std::uintptr_t, nb::object>(), nb::arg("handle"), nb::arg("object") = nb::none())
      .def("enter", &StreamGuard::enter)
      .def("exit", &StreamGuard::exit)
      .def_prop_ro("handle", &StreamGuard::handle)
      .def_prop_ro("entered", &StreamGuard::entered);

  m.def("current_stream", []() -> std::optional<std::uintptr_t> {
    auto s = et::caller_stream();
    if (!s) return std::nullopt;
    return reinterpret_cast<std::uintptr_t>(*s);
  }, "The stream the innermost live guard of this thread selected (an int), or None.");

  nb::class_<Partition>(m, "Partition", "A green-context partition of a GPU's SMs with streams of its own.")
      .def_prop_ro("name", [](const Partition& p) { return p.name; }, "The plan's name for it ('' from split_device).")
      .def_prop_ro("device", [](const Partition& p) { return p.get().device(); })
      .def_prop_ro("sm_count", [](const Partition& p) { return p.get().sm_count(); }, "The SMs the driver granted.")
      .def_prop_ro("requested_sms", [](const Partition& p) { return p.get().requested_sms(); })
      .def_prop_ro("is_remainder", [](const Partition& p) { return p.get().is_remainder(); })
      .def_prop_ro("closed", [](const Partition& p) { return !p.ctx || !*p.ctx; })
      .def_prop_ro("stream", [](const Partition& p) {
        return Stream{reinterpret_cast<std::uintptr_t>(p.get().stream()), p.ctx};
      }, "The partition's first stream.")
      .def_prop_ro("streams", [](const Partition& p) {
        std::vector<Stream> out;
        for (cudaStream_t s : p.get().streams()) out.push_back(Stream{reinterpret_cast<std::uintptr_t>(s), p.ctx});
        return out;
      })
      .def("make_stream", [](const Partition& p, int priority) {
        auto s = p.get().make_stream(priority);
        if (!s.ok()) raise(s.error());
        register_stream(*s, p.ctx);
        return Stream{reinterpret_cast<std::uintptr_t>(*s), p.ctx};
      }, nb::arg("priority") = 0, "One more non-blocking stream on this partition, owned by it.")
      .def("close", [](Partition& p) {
        if (p.ctx) {
          nb::gil_scoped_release release;
          p.ctx->reset();
        }
      }, "Waits for the partition's own streams, destroys them and the green context.");

  m.def("green_context_limits", [](int device) {
    auto l = et::green_context_limits(device);
    if (!l.ok()) raise(l.error());
    return limits_dict(*l);
  }, nb::arg("device") = 0);

  m.def("split_device", [](int device, const std::vector<unsigned>& sms, bool keep_remainder) {
    auto parts = et::split_device(device, sms, keep_remainder ? et::Remainder::kKeep : et::Remainder::kDrop);
    if (!parts.ok()) raise(parts.error());
    return wrap(std::move(*parts), {});
  }, nb::arg("device"), nb::arg("sm_counts"), nb::arg("keep_remainder") = false);

  nb::class_<et::DevicePlan>(m, "DevicePlan", "One device's part of a partition plan: what one split makes.")
      .def_prop_ro("device", [](const et::DevicePlan& p) { return p.device; }, "-1: for any device.")
      .def_prop_ro("remainder_name", [](const et::DevicePlan& p) { return p.remainder_name; })
      .def_prop_ro("total_sms", &et::DevicePlan::total_sms)
      .def_prop_ro("gpu", [](const et::DevicePlan& p) {
        et::GreenContextLimits limits;
        limits.sm_count = p.gpu.sm_count;
        limits.min_partition = p.gpu.min_partition;
        limits.alignment = p.gpu.alignment;
        limits.granularity = p.gpu.granularity;
        limits.max_partitioned_sms = p.gpu.max_partitioned_sms;
        nb::dict d = limits_dict(limits, /*with_device=*/false);
        d["name"] = p.gpu.name;
        return d;
      })
      .def_prop_ro("partitions", [](const et::DevicePlan& p) {
        nb::list out;
        for (const auto& part : p.partitions) {
          nb::dict d;
          d["name"] = part.name;
          d["sms"] = part.sms;
          d["p99_target_us"] = part.p99_target_us;
          d["min_calls_per_s"] = part.min_calls_per_s;
          d["p99_alone_us"] = part.p99_alone_us;
          d["p99_beside_us"] = part.p99_beside_us;
          d["program"] = part.program;
          out.append(d);
        }
        return out;
      });

  nb::class_<et::PartitionPlan>(m, "PartitionPlan", "A partition plan (trtet-plan's JSON), checked: one entry per device.")
      .def_prop_ro("devices", [](const et::PartitionPlan& p) { return p.devices; }, "The entries, ascending by device.")
      .def_prop_ro("any_device", &et::PartitionPlan::any_device, "One entry, for whichever device applies it.")
      .def("to_json", [](const et::PartitionPlan& p) {
        auto j = et::partition_plan_json(p);
        if (!j.ok()) raise(j.error());
        return *j;
      });

  m.def("read_partition_plan", [](const std::string& path) {
    auto p = et::read_partition_plan(path);
    if (!p.ok()) raise(p.error());
    return std::move(*p);
  }, nb::arg("path"));
  m.def("parse_partition_plan", [](const std::string& text) {
    auto p = et::parse_partition_plan(text);
    if (!p.ok()) raise(p.error());
    return std::move(*p);
  }, nb::arg("text"));
  m.def("apply_partition_plan", [](const et::PartitionPlan& plan, int device) {
    auto parts = et::apply_partition_plan(plan, device);
    if (!parts.ok()) raise(parts.error());
    std::vector<std::string> names = parts->names();
    return wrap(std::move(*parts).release(), names);
  }, nb::arg("plan"), nb::arg("device") = et::kAnyDevice);
}

}  // namespace trtet_py
