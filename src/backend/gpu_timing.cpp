#include "backend/gpu_timing.h"

#include <torch_tensorrt/executorch/Profiling.h>

#include <executorch/runtime/platform/platform.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend {
namespace {

namespace et = ::executorch::runtime;

/// Every live profiler, visited by flush_profiling. Lock order: this lock, then a profiler's; a
/// profiler never takes this one while holding its own.
struct Registry {
  std::mutex mutex;
  std::vector<DelegateTimer*> live;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: handles may outlive static destruction
  return *instance;
}

void log_span(et::EventTracer& tracer, const std::string& event, const char* kind, const delegate::GpuSpan& span,
              const delegate::TimedCall& call, unsigned green_sms) {
  if (!span.present) return;
  char metadata[kMetadataBytes];
  const std::size_t length = event_metadata(metadata, kind, call.sequence, call.record, green_sms, span.duration_ns, true);
  tracer.log_profiling_delegate(event.c_str(), et::kUnsetDelegateDebugIntId, span.start_ticks, span.end_ticks, metadata,
                                length);
}

std::uint64_t tracer_ticks() { return et::pal_current_ticks(); }

}  // namespace

std::size_t event_metadata(char (&out)[kMetadataBytes], const char* kind, std::uint64_t sequence,
                           const delegate::CallRecord& record, unsigned green_sms, double gpu_ns, bool ok,
                           int gpu_timed) {
  // std::to_chars rather than snprintf: this runs for every event of every traced call.
  char* at = out;
  char* const end = out + sizeof out - 1;  // room for the NUL
  auto text = [&](const char* value) {
    for (; *value != '\0' && at < end; ++value) *at++ = *value;
  };
  auto number = [&](unsigned long long value) {
    const std::to_chars_result written = std::to_chars(at, end, value);
    at = written.ec == std::errc() ? written.ptr : end;
  };
  text("trtet call=");
  number(sequence);
  text(" kind=");
  text(kind);
  if (ok && record.filled) {
    text(" path=");
    text(delegate::to_string(record.path));
    text(" profile=");
    if (record.profile < 0) text("-");
    number(static_cast<unsigned long long>(record.profile < 0 ? -static_cast<long long>(record.profile) : record.profile));
    text(" staged_bytes=");
    number(record.staged_bytes);
    text(" green_sms=");
    number(green_sms);
  }
  if (gpu_ns >= 0) {
    text(" gpu_ns=");
    number(gpu_ns < 1.8e19 ? static_cast<unsigned long long>(gpu_ns + 0.5) : ~0ull);
  }
  if (gpu_timed >= 0) text(gpu_timed > 0 ? " gpu_timed=1" : " gpu_timed=0");
  text(ok ? " status=ok" : " status=failed");
  *at = '\0';
  return static_cast<std::size_t>(at - out);
}

void log_host_call(et::EventTracer& tracer, const EventNames& names, const HostCall& call) {
  char metadata[kMetadataBytes];
  const std::size_t length = event_metadata(metadata, "host", call.sequence, call.record, call.green_sms, -1, call.ok,
                                              call.gpu_timed);
  tracer.log_profiling_delegate(names.host.c_str(), et::kUnsetDelegateDebugIntId, call.start, call.end, metadata,
                                length);
}

void log_timed_call(et::EventTracer& tracer, const EventNames& names, const delegate::TimedCall& call,
                    unsigned green_sms) {
  log_span(tracer, names.copy_in, "gpu_copy_in", call.copy_in, call, green_sms);
  log_span(tracer, names.engine, "gpu_engine", call.engine, call, green_sms);
  log_span(tracer, names.copy_out, "gpu_copy_out", call.copy_out, call, green_sms);
}

delegate::TickClock tracer_clock() {
  const et_tick_ratio_t ratio = et::pal_ticks_to_ns_multiplier();
  delegate::TickClock clock;
  clock.now = &tracer_ticks;
  // ns = ticks * numerator / denominator
  clock.ticks_per_ns = ratio.numerator != 0 ? static_cast<double>(ratio.denominator) / static_cast<double>(ratio.numerator)
                                            : 1.0;
  return clock;
}

std::string delegate_event_name(const char* method, const void* allocator, const void* handle) {
  struct LastLoad {
    const void* allocator = nullptr;
    const void* handle = nullptr;
    std::string method;
    int next = 0;
  };
  thread_local LastLoad last;  // ExecuTorch's Method initializes its delegates in order, on one thread
  const std::string name = method != nullptr ? method : "method";
  const bool same_load = allocator != nullptr && allocator == last.allocator && name == last.method &&
                         std::less<const void*>()(last.handle, handle);
  last.next = same_load ? last.next + 1 : 0;
  last.allocator = allocator;
  last.handle = handle;
  last.method = name;
  return name + ":TensorRTBackend#" + std::to_string(last.next);
}

DelegateTimer::DelegateTimer() noexcept : calls_(tracer_clock()) {}

DelegateTimer::~DelegateTimer() {
  if (!attached_.load(std::memory_order_acquire)) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.erase(std::remove(r.live.begin(), r.live.end(), this), r.live.end());
}

void DelegateTimer::attach() {
  if (attached_.load(std::memory_order_acquire)) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (attached_.load(std::memory_order_relaxed)) return;
  r.live.push_back(this);
  attached_.store(true, std::memory_order_release);
}

unsigned DelegateTimer::sms_of(const delegate::CallRecord& record) {
  if (!record.green_known || record.green_context == nullptr) return 0;
  if (record.green_context != last_green_) {
    Result<unsigned> sms = delegate::green_context_sms(record.green_context);
    last_green_ = record.green_context;
    last_green_sms_ = sms.ok() ? *sms : 0;
  }
  return last_green_sms_;
}

Status DelegateTimer::log_known(et::EventTracer& tracer) {
  timed_.clear();
  const Status collected = calls_.collect(timed_);  // what it timed before an error is still logged
  for (const delegate::TimedCall& call : timed_) log_timed_call(tracer, names_, call, sms_of(call.record));
  return collected;
}

Status DelegateTimer::run(et::EventTracer& tracer, delegate::Session& session, delegate::TensorView* args,
                             std::size_t count) {
  attach();
  std::unique_ptr<delegate::CallMarks> marks;
  HostCall host;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tracer_ != &tracer) calls_.reset();  // calls traced into another tracer are not this one's to log
    tracer_ = &tracer;
    host.sequence = ++sequence_;
    // Note [sampled GPU times]: a call left untimed records no timing events (the two that time a
    // call are most of what tracing costs a short call); its host event says it was left out.
    const bool timed = gpu_every_ == 1 || (host.sequence - 1) % gpu_every_ == 0;
    if (timed) marks = calls_.take_marks();
    if (gpu_every_ > 1) host.gpu_timed = timed ? 1 : 0;
  }
  delegate::CallRecord record;
  record.marks = marks.get();
  host.start = et::pal_current_ticks();
  const Status status = session.execute(args, count, &record);
  host.end = et::pal_current_ticks();
  host.ok = status.ok();
  host.record = record;
  std::lock_guard<std::mutex> lock(mutex_);
  host.green_sms = sms_of(record);
  log_host_call(tracer, names_, host);
  calls_.finish(std::move(marks), record, host.sequence, status.ok());
  if (status.ok() && record.path != delegate::CallPath::kCaptured) {
    const Status logged = log_known(tracer);
    if (!logged.ok()) log(LogLevel::kDebug, "profiling %s: %s", names_.host.c_str(), logged.to_string().c_str());
  }
  return status;
}

Result<std::size_t> DelegateTimer::flush(et::EventTracer* tracer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (tracer_ == nullptr || tracer_ != tracer) return std::size_t{0};
  TRTET_RETURN_IF_ERROR(log_known(*tracer));
  return calls_.pending();
}

void DelegateTimer::retire() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (calls_.pending() > 0) {
    log(LogLevel::kDebug, "profiling %s: destroyed with %zu call(s) whose GPU times were not flushed; not logged",
        names_.host.c_str(), calls_.pending());
  }
  calls_.reset();
  tracer_ = nullptr;
}

Result<std::size_t> flush_profiling(et::EventTracer* tracer) {
  TRTET_CHECK_OR_RETURN(tracer != nullptr, kInvalidArgument, "flush_profiling needs the tracer to log into (got null)");
  return without_exceptions("flush_profiling", [&]() -> Result<std::size_t> {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::size_t pending = 0;
    Status first_error;
    for (DelegateTimer* profiler : r.live) {
      Result<std::size_t> left = profiler->flush(tracer);
      if (left.ok()) {
        pending += *left;
      } else if (first_error.ok()) {
        first_error = left.status();
      }
    }
    TRTET_RETURN_IF_ERROR(first_error);
    return pending;
  });
}

}  // namespace torch_tensorrt::executorch_backend
