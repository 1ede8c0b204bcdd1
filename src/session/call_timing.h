// What a profiler learns of one execute(): the call's record (filled by Session::execute when a
// caller asks for it) and the GPU times of its engine and staging copies, read from CUDA events on
// the call's stream once they are known, never by waiting (Note [deferred GPU times]).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cuda/event.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// The points of a call on its stream that GPU times are read between.
enum class Mark : int { kCopyInStart = 0, kCopyInEnd, kEngineStart, kEngineEnd, kCopyOutEnd };
constexpr int kMarkCount = 5;

/// How a call ran its engine.
enum class CallPath : std::uint8_t {
  kEager,        ///< prepared in full, the engine enqueued
  kGraphReplay,  ///< prepared in full, a delegate-owned graph launched (Note [delegate graphs])
  kRepeat,       ///< the kept call repeated (Note [repeated calls]): an enqueue or a graph launch
  kCaptured,     ///< recorded into the caller's capture: its replays are the caller's to time
};
const char* to_string(CallPath path) noexcept;

/// The host clock GPU times are placed on: the tracer's ticks, and how many make a nanosecond.
struct TickClock {
  std::uint64_t (*now)() = nullptr;
  double ticks_per_ns = 1.0;
};

/// The timing events of one call, recorded by the session on the call's stream. Events are made
/// (with timing) on first use, on the current device, and reused for later calls. A record that
/// fails marks the set broken: the call goes on, its GPU times are not logged.
class CallMarks {
 public:
  explicit CallMarks(TickClock clock) noexcept : clock_(clock) {}
  CallMarks(const CallMarks&) = delete;  // owns events
  CallMarks& operator=(const CallMarks&) = delete;

  void record(Mark mark, cudaStream_t stream) noexcept;
  /// What record() notes, without CUDA: for tests of the deferral (with a scripted MarkReader).
  void note_recorded(Mark mark, std::uint64_t ticks) noexcept;
  void clear() noexcept {
    recorded_ = 0;
    first_ticks_ = 0;
    broken_ = false;
  }

  bool recorded(Mark mark) const noexcept { return ((recorded_ >> static_cast<int>(mark)) & 1u) != 0; }
  bool any() const noexcept { return recorded_ != 0; }
  bool broken() const noexcept { return broken_; }
  /// The first and last marks recorded (any() must hold).
  Mark first() const noexcept;
  Mark last() const noexcept;
  /// The host ticks just before the first mark was recorded: the GPU reached it no earlier.
  std::uint64_t first_ticks() const noexcept { return first_ticks_; }
  cudaEvent_t event(Mark mark) const noexcept { return events_[static_cast<int>(mark)].get(); }

 private:
  TickClock clock_;
  cuda::Event events_[kMarkCount];
  unsigned recorded_ = 0;
  std::uint64_t first_ticks_ = 0;
  bool broken_ = false;
};

/// Records `mark` for a call that is timed (`marks` non-null): the only cost of profiling on the
/// execute path when no profiler is attached is this branch.
inline void record_mark(CallMarks* marks, Mark mark, cudaStream_t stream) noexcept {
  if (marks != nullptr) marks->record(mark, stream);
}

/// What Session::execute tells about a call, when the caller passes one (one branch otherwise).
struct CallRecord {
  CallMarks* marks = nullptr;  ///< set by the caller: where the GPU marks go (null: no GPU times)
  // Filled by a successful execute:
  bool filled = false;
  CallPath path = CallPath::kEager;
  int profile = 0;                      ///< the optimization profile
  std::uint64_t staged_bytes = 0;       ///< bytes copied through the session's staging, in and out
  bool green_known = false;             ///< green_context was read (not for captures)
  CUgreenCtx green_context = nullptr;   ///< of the call's stream; null for an ordinary stream
};

/// The SMs of a green context (cuGreenCtxGetDevResource).
Result<unsigned> green_context_sms(CUgreenCtx context);

/// A span of a call's GPU work on the host clock: start and end in ticks, and its length as CUDA
/// measured it (exact, unlike the placement, which is as good as the anchor; Note [deferred GPU times]).
struct GpuSpan {
  bool present = false;
  std::uint64_t start_ticks = 0, end_ticks = 0;
  double duration_ns = 0;
};

/// A call whose GPU times are known.
struct TimedCall {
  std::uint64_t sequence = 0;  ///< the caller's number for the call
  CallRecord record;           ///< marks cleared
  GpuSpan copy_in, engine, copy_out;
};

/// How marks are read: CUDA events, or a test's script. Neither call may wait.
class MarkReader {
 public:
  virtual ~MarkReader() = default;
  /// Whether the GPU has passed `mark` (a query, never a wait).
  virtual Result<bool> passed(const CallMarks& marks, Mark mark) = 0;
  /// Milliseconds from `a` of `from` to `b` of `to`, both passed.
  virtual Result<float> elapsed_ms(const CallMarks& from, Mark a, const CallMarks& to, Mark b) = 0;
};
/// cudaEventQuery and cudaEventElapsedTime.
MarkReader& cuda_mark_reader();

/// The GPU side of one delegate's profiling: marks handed out per call and taken back, calls kept
/// until their GPU times are known, and those times placed on the host clock
/// (Note [deferred GPU times] in call_timing.cpp). Not thread-safe: its owner serializes it.
class CallTimer {
 public:
  explicit CallTimer(TickClock clock, MarkReader& reader = cuda_mark_reader()) noexcept
      : clock_(clock), reader_(&reader) {}
  CallTimer(const CallTimer&) = delete;  // owns events
  CallTimer& operator=(const CallTimer&) = delete;

  /// Marks for the next call (reused; made on first use).
  std::unique_ptr<CallMarks> take_marks();
  /// The call is over: a successful call with marks waits for its GPU times; otherwise the marks go
  /// back (a failed call logs no GPU time; a captured one has none of its own).
  void finish(std::unique_ptr<CallMarks> marks, const CallRecord& record, std::uint64_t sequence, bool ok);
  /// Appends to `out` the kept calls whose GPU work has passed their last mark, in call order up
  /// to the first that has not (one query for a call still running), and forgets them. Queries
  /// only: never waits.
  Status collect(std::vector<TimedCall>& out);
  /// Calls whose GPU times are not known yet.
  std::size_t pending() const noexcept { return pending_.size(); }
  /// Calls dropped because more than kMaxPending were waiting.
  std::uint64_t dropped() const noexcept { return dropped_; }
  /// Forgets every kept call and the anchor.
  void reset() noexcept;

  /// At most this many calls wait for their GPU times; the oldest goes when one more comes.
  static constexpr std::size_t kMaxPending = 4096;
  /// A new anchor is taken once a call starts this long after the current one.
  static constexpr float kAnchorSpanMs = 1000.0f;

 private:
  struct Pending {
    std::uint64_t sequence = 0;
    CallRecord record;
    std::unique_ptr<CallMarks> marks;
  };
  Status time_call(Pending& call, TimedCall& timed);
  /// The span from `from` to `to` of `marks`, whose first mark sits at `first_ticks`.
  Result<GpuSpan> span(const CallMarks& marks, Mark from, Mark to, double first_ticks);
  void give_back(std::unique_ptr<CallMarks> marks);

  TickClock clock_;
  MarkReader* reader_;
  std::deque<Pending> pending_;
  std::vector<std::unique_ptr<CallMarks>> free_;
  std::unique_ptr<CallMarks> anchor_;  ///< the marks of the call GPU times are placed from
  std::uint64_t anchor_ticks_ = 0;     ///< where anchor_'s first mark sits on the host clock
  std::uint64_t dropped_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
