// The delegate's calls in ExecuTorch's EventTracer (include/torch_tensorrt/executorch/Profiling.h):
// how a call becomes tracer events (pure, tested on the CPU against ETDumpGen), and the per-handle
// profiler that runs a traced call and logs its GPU times once known (Note [deferred GPU times] in
// src/session/call_timing.cpp).
#pragma once

#include <executorch/runtime/core/event_tracer.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "session/call_timing.h"
#include "session/session.h"
#include "session/tensor_view.h"

namespace torch_tensorrt::executorch_backend {

/// The host side of one call, as logged.
struct HostCall {
  std::uint64_t sequence = 0;  ///< the delegate's call number, from 1
  et_timestamp_t start = 0;    ///< tracer ticks around execute
  et_timestamp_t end = 0;
  bool ok = true;
  delegate::CallRecord record;  ///< as execute filled it (record.filled false for a failed call)
  unsigned green_sms = 0;       ///< of the stream's green context; 0: an ordinary stream or unknown
  int gpu_timed = -1;           ///< 1: GPU-timed, 0: sampled out (profiling_gpu_every > 1); -1: every call is timed
};

/// An event's metadata, written into `out` (at most kMetadataBytes, NUL included); its length.
/// "trtet call=N kind=KIND", then for a call that succeeded "path=... profile=P staged_bytes=B
/// green_sms=S", then "gpu_ns=D" where `gpu_ns` >= 0, then "gpu_timed=0|1" where `gpu_timed` >= 0
/// (host events of a delegate that times every Nth call), then "status=ok|failed".
constexpr std::size_t kMetadataBytes = 192;
std::size_t event_metadata(char (&out)[kMetadataBytes], const char* kind, std::uint64_t sequence,
                           const delegate::CallRecord& record, unsigned green_sms, double gpu_ns, bool ok,
                           int gpu_timed = -1);

/// A delegate's event names: the host event's, and its GPU events' ("<name> [gpu engine]", ...).
struct EventNames {
  explicit EventNames(const std::string& name = "TensorRTBackend")
      : host(name), copy_in(name + " [gpu copy_in]"), engine(name + " [gpu engine]"), copy_out(name + " [gpu copy_out]") {}
  std::string host, copy_in, engine, copy_out;
};

/// The host event of a call, from `call.start` to `call.end`.
void log_host_call(::executorch::runtime::EventTracer& tracer, const EventNames& names, const HostCall& call);
/// The GPU events present in a timed call: engine, copies in, copies out.
void log_timed_call(::executorch::runtime::EventTracer& tracer, const EventNames& names, const delegate::TimedCall& call,
                    unsigned green_sms);

/// The tracer's clock: ExecuTorch's platform ticks and their rate.
delegate::TickClock tracer_clock();

/// "<method>:TensorRTBackend#<k>", k counting the TensorRT delegates of one load of the method:
/// `allocator` is the method's runtime allocator and `handle` the address it gave this delegate (a
/// bump allocator: a handle at or below the last one means a new load).
std::string delegate_event_name(const char* method, const void* allocator, const void* handle);

/// One delegate's profiling: its name, its calls' GPU times (delegate::CallTimer) and the
/// tracer they go to. Serialized by its own lock; execute itself runs outside it.
class DelegateTimer {
 public:
  DelegateTimer() noexcept;
  ~DelegateTimer();  ///< leaves the process's list of profilers flush_profiling() visits
  DelegateTimer(const DelegateTimer&) = delete;  // registered by address
  DelegateTimer& operator=(const DelegateTimer&) = delete;

  void set_name(const std::string& name) { names_ = EventNames(name); }
  /// Times the GPU of the first call and of every `every`-th after it (1: every call; the load
  /// option profiling_gpu_every). Every call still logs its host event.
  void set_gpu_every(std::uint32_t every) noexcept { gpu_every_ = every == 0 ? 1 : every; }
  const std::string& name() const noexcept { return names_.host; }

  /// One execute with `tracer` attached: the call runs through `session` with a record; its host
  /// event is logged at once, and the GPU events of this and earlier calls that are known. Nothing
  /// is queried when the call failed or was captured (the thread may be capturing).
  Status run(::executorch::runtime::EventTracer& tracer, delegate::Session& session, delegate::TensorView* args,
             std::size_t count);
  /// Logs into `tracer` what is known now, if this delegate traces into it; returns how many of
  /// its calls are still pending.
  Result<std::size_t> flush(::executorch::runtime::EventTracer* tracer);
  /// At destroy: forgets the calls not logged yet and logs nothing. The tracer may have been
  /// finalized (ETDumpGen aborts the process on an event added after get_etdump_data()) or
  /// destroyed before the method; an application flushes before it destroys.
  void retire() noexcept;

 private:
  void attach();
  /// Collects and logs what is known (the lock held).
  Status log_known(::executorch::runtime::EventTracer& tracer);
  unsigned sms_of(const delegate::CallRecord& record);

  std::mutex mutex_;
  EventNames names_;
  delegate::CallTimer calls_;
  ::executorch::runtime::EventTracer* tracer_ = nullptr;  ///< where this delegate's calls are logged
  std::uint64_t sequence_ = 0;
  std::uint32_t gpu_every_ = 1;
  std::atomic<bool> attached_{false};
  std::vector<delegate::TimedCall> timed_;  ///< scratch, reused
  CUgreenCtx last_green_ = nullptr;         ///< the last green context asked, and its SMs
  unsigned last_green_sms_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend
