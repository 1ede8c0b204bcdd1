#include "session/call_timing.h"

#include <utility>

#include "common/log.h"
#include "cuda/check.h"
#include "cuda/driver.h"

namespace torch_tensorrt::executorch_backend::delegate {

// Note [deferred GPU times]
// A call that returns before its GPU work is done has two times: the host time of execute, known
// when it returns, and the GPU time of its engine and staging copies, known only once the GPU has
// run them. The session records CUDA events (with timing) on the call's stream at up to five
// marks: before and after the copies in, before and after the engine (after every wait the engine
// is ordered behind, so the engine span is the engine's alone), and after the copies out. Nothing
// ever waits for them: the profiler keeps the call and asks (cudaEventQuery on its last mark)
// whenever it is given a chance, at a later call or at an explicit flush (destroy logs nothing: the
// tracer may be finalized by then; src/backend/gpu_timing.h). Each call's durations are cudaEventElapsedTime
// between its own marks, exact to CUDA's resolution (about half a microsecond).
//
// Where the spans sit on the host clock: the first timed call's first mark is the anchor, placed
// at the host ticks read just before it was recorded. Every later mark is placed at the anchor
// plus the GPU time between them. A mark was recorded no earlier than the GPU reached it, so when a
// later call's first mark would be placed before the host ticks of its own recording, the anchor
// was placed too early (the stream was busy when it was recorded) and moves later by the
// difference: the placement only improves, and becomes exact after any call recorded on an idle
// stream. cudaEventElapsedTime is a float of milliseconds, so a call that starts more than a
// second after the anchor becomes the next anchor (placed from the previous one), which keeps the
// placement within a microsecond. Where two marks cannot be compared (elapsed time refused), the
// call becomes the anchor at its own host ticks.

const char* to_string(CallPath path) noexcept {
  switch (path) {
    case CallPath::kEager:
      return "eager";
    case CallPath::kGraphReplay:
      return "graph_replay";
    case CallPath::kRepeat:
      return "repeat";
    case CallPath::kCaptured:
      return "captured";
  }
  return "?";
}

void CallMarks::record(Mark mark, cudaStream_t stream) noexcept {
  if (broken_) return;
  cuda::Event& event = events_[static_cast<int>(mark)];
  if (!event) {
    Result<cuda::Event> made = cuda::Event::create(cudaEventDefault);  // with timing
    if (!made.ok()) {
      broken_ = true;
      log(LogLevel::kDebug, "profiling: no timing event (%s); this call's GPU times are not logged",
          made.status().to_string().c_str());
      return;
    }
    event = std::move(made).value();
  }
  const std::uint64_t ticks = recorded_ == 0 && clock_.now != nullptr ? clock_.now() : 0;
  const Status recorded = event.record(stream);
  if (!recorded.ok()) {
    broken_ = true;
    log(LogLevel::kDebug, "profiling: recording a timing event failed (%s); this call's GPU times are not logged",
        recorded.to_string().c_str());
    return;
  }
  note_recorded(mark, ticks);
}

void CallMarks::note_recorded(Mark mark, std::uint64_t ticks) noexcept {
  if (recorded_ == 0) first_ticks_ = ticks;
  recorded_ |= 1u << static_cast<int>(mark);
}

Mark CallMarks::first() const noexcept {
  for (int m = 0; m < kMarkCount; ++m) {
    if (((recorded_ >> m) & 1u) != 0) return static_cast<Mark>(m);
  }
  return Mark::kCopyInStart;
}

Mark CallMarks::last() const noexcept {
  for (int m = kMarkCount - 1; m >= 0; --m) {
    if (((recorded_ >> m) & 1u) != 0) return static_cast<Mark>(m);
  }
  return Mark::kCopyInStart;
}

Result<unsigned> green_context_sms(CUgreenCtx context) {
  TRTET_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  CUdevResource resource{};
  TRTET_CU_CHECK(api->cuGreenCtxGetDevResource(context, &resource, CU_DEV_RESOURCE_TYPE_SM));
  return static_cast<unsigned>(resource.sm.smCount);
}

namespace {

class CudaMarkReader final : public MarkReader {
 public:
  Result<bool> passed(const CallMarks& marks, Mark mark) override {
    const cudaError_t error = cudaEventQuery(marks.event(mark));
    if (error == cudaSuccess) return true;
    if (error == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    return cuda::runtime_status(error, "cudaEventQuery", __FILE__, __LINE__);
  }
  Result<float> elapsed_ms(const CallMarks& from, Mark a, const CallMarks& to, Mark b) override {
    float ms = 0;
    const cudaError_t error = cudaEventElapsedTime(&ms, from.event(a), to.event(b));
    if (error == cudaSuccess) return ms;
    (void)cudaGetLastError();
    return cuda::runtime_status(error, "cudaEventElapsedTime", __FILE__, __LINE__);
  }
};

}  // namespace

MarkReader& cuda_mark_reader() {
  static CudaMarkReader reader;
  return reader;
}

std::unique_ptr<CallMarks> CallTimer::take_marks() {
  if (free_.empty()) return std::make_unique<CallMarks>(clock_);
  std::unique_ptr<CallMarks> marks = std::move(free_.back());
  free_.pop_back();
  return marks;
}

void CallTimer::give_back(std::unique_ptr<CallMarks> marks) {
  if (marks == nullptr) return;
  marks->clear();
  free_.push_back(std::move(marks));
}

void CallTimer::finish(std::unique_ptr<CallMarks> marks, const CallRecord& record, std::uint64_t sequence,
                          bool ok) {
  if (!ok || marks == nullptr || !marks->any() || marks->broken() || record.path == CallPath::kCaptured) {
    give_back(std::move(marks));
    return;
  }
  if (pending_.size() >= kMaxPending) {
    give_back(std::move(pending_.front().marks));
    pending_.pop_front();
    if (dropped_++ == 0) {
      log(LogLevel::kWarning, "profiling: more than %zu calls wait for their GPU times; the oldest are dropped "
          "(flush the profiling data now and then)", kMaxPending);
    }
  }
  Pending call;
  call.sequence = sequence;
  call.record = record;
  call.record.marks = nullptr;
  call.marks = std::move(marks);
  pending_.push_back(std::move(call));
}

Result<GpuSpan> CallTimer::span(const CallMarks& marks, Mark from, Mark to, double first_ticks) {
  GpuSpan span;
  if (!marks.recorded(from) || !marks.recorded(to)) return span;
  float offset_ms = 0;
  if (from != marks.first()) {
    TRTET_ASSIGN_OR_RETURN(offset_ms, reader_->elapsed_ms(marks, marks.first(), marks, from));
  }
  TRTET_ASSIGN_OR_RETURN(const float duration_ms, reader_->elapsed_ms(marks, from, marks, to));
  span.present = true;
  span.duration_ns = static_cast<double>(duration_ms) * 1e6;
  const double start = first_ticks + static_cast<double>(offset_ms) * 1e6 * clock_.ticks_per_ns;
  span.start_ticks = start > 0 ? static_cast<std::uint64_t>(start) : 0;
  span.end_ticks = span.start_ticks + static_cast<std::uint64_t>(span.duration_ns * clock_.ticks_per_ns);
  return span;
}

Status CallTimer::time_call(Pending& call, TimedCall& timed) {
  const CallMarks& marks = *call.marks;
  // Where this call's first mark sits (Note [deferred GPU times]).
  bool adopt = anchor_ == nullptr;
  double first_ticks = static_cast<double>(marks.first_ticks());
  if (!adopt) {
    Result<float> offset = reader_->elapsed_ms(*anchor_, anchor_->first(), marks, marks.first());
    if (!offset.ok()) {
      adopt = true;  // not comparable: placed at its own host ticks
    } else {
      const double placed = static_cast<double>(anchor_ticks_) + static_cast<double>(*offset) * 1e6 * clock_.ticks_per_ns;
      if (placed < first_ticks) {
        anchor_ticks_ += static_cast<std::uint64_t>(first_ticks - placed);  // the anchor was placed too early
      } else {
        first_ticks = placed;
      }
      adopt = *offset > kAnchorSpanMs;
    }
  }
  timed.sequence = call.sequence;
  timed.record = call.record;
  TRTET_ASSIGN_OR_RETURN(timed.copy_in, span(marks, Mark::kCopyInStart, Mark::kCopyInEnd, first_ticks));
  TRTET_ASSIGN_OR_RETURN(timed.engine, span(marks, Mark::kEngineStart, Mark::kEngineEnd, first_ticks));
  TRTET_ASSIGN_OR_RETURN(timed.copy_out, span(marks, Mark::kEngineEnd, Mark::kCopyOutEnd, first_ticks));
  if (adopt) {
    give_back(std::move(anchor_));
    anchor_ = std::move(call.marks);
    anchor_ticks_ = first_ticks > 0 ? static_cast<std::uint64_t>(first_ticks) : 0;
  }
  return Status::Ok();
}

Status CallTimer::collect(std::vector<TimedCall>& out) {
  // In call order, up to the first call still running: calls on one stream pass their marks in
  // order, so one query a call suffices however far the GPU is behind (a call on another stream
  // that finished first waits for the earlier ones).
  while (!pending_.empty()) {
    Pending& call = pending_.front();
    TRTET_ASSIGN_OR_RETURN(const bool passed, reader_->passed(*call.marks, call.marks->last()));
    if (!passed) break;
    TimedCall timed;
    const Status timed_ok = time_call(call, timed);
    if (timed_ok.ok()) {
      out.push_back(timed);
    } else {
      log(LogLevel::kDebug, "profiling: call %llu's GPU times could not be read (%s); not logged",
          static_cast<unsigned long long>(call.sequence), timed_ok.to_string().c_str());
    }
    give_back(std::move(call.marks));  // null when the call became the anchor
    pending_.pop_front();
  }
  return Status::Ok();
}

void CallTimer::reset() noexcept {
  for (Pending& call : pending_) give_back(std::move(call.marks));
  pending_.clear();
  give_back(std::move(anchor_));
  anchor_ticks_ = 0;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
