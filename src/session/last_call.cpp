#include "session/last_call.h"

namespace torch_tensorrt::executorch_backend::delegate {

// Note [repeated calls]
// ---------------------
// An application that runs one model over and over calls it with the same tensors (ExecuTorch's
// planned memory keeps their addresses) on the same stream. Each such call comes to one graph
// launch (graph mode) or one enqueue of the engine (eager), and the rest of the call (checking the
// arguments against the engine, classifying their memory, setting shapes and addresses on the
// engine, building the graph key and finding it) would come out the same every time: for a call
// with every tensor in device-accessible memory, on the stream of the previous call, with nothing
// ordered across streams, every step is a function of the arguments, the engine's state and the
// session's state, and none of those changed since. So the call is kept (remember), and the next
// call whose arguments match it field by field (address, capacity, shape, type, memory hint), on
// the same stream, queues its work again at once (Session::repeat_call, through a schedule of one
// phase: CallOrdering::begin_repeat, Note [the call schedule]): the graph launch, or the engine's
// enqueue with the shapes and addresses the engine still holds (EngineRunner::repeat), then the
// completion event, as the full path would queue them.
//
// Whatever could make the full path differ ends the repeat: any other call (its first step drops
// the kept call), a capture on the stream (the check comes after the stream is resolved, and a
// capturing call is never kept), a caller's capture of an earlier call (eager calls then wait for
// every earlier call), release_unused_memory and destroy (graphs and staging may go). Only device-
// accessible arguments qualify, so no staging, host copy or wait for host data is skipped. An
// eager call is kept only where the engine was enqueued plainly: not the eager first sight of a
// shape in graph mode (the next call captures), not an engine with auxiliary streams (they are
// handed over before every enqueue). While a call is kept, it was the last call (any other drops
// it first), so no graph of the session was captured since, and the ordering's last stream and
// the engine's bindings are its own: the call's own stream and capture state are all there is to
// check.
bool LastCall::repeated_by(const TensorView* args, std::size_t count, const ResolvedStream& where) const noexcept {
  if (!kept_ || where.facts.capturing || !where.id.same_as(stream_)) return false;
  if (args == nullptr || count != args_.size()) return false;
  for (std::size_t i = 0; i < count; ++i) {
    const TensorView& now = args[i];
    const TensorView& then = args_[i];
    if (now.data != then.data || now.capacity_bytes != then.capacity_bytes || now.dtype != then.dtype ||
        now.hint != then.hint || now.shape != then.shape) {
      return false;
    }
  }
  return true;
}

void LastCall::remember(const TensorView* args, std::size_t count, const CallPlan& plan, const CallOrder& order,
                        const EngineRun& run) {
  // A launched graph or a plain enqueue means the call was not capturing; returning at once means
  // nothing of it is in host memory (so nothing was staged); a stream of the caller's (not joined)
  // has a known id.
  const bool repeatable = (run.launched != nullptr || run.plain) && !plan.capturing() && !plan.where.joined() &&
                          plan.where.id.known() && plan.completion == Completion::kReturnAtOnce &&
                          !order.cross_stream && !order.graphs_may_replay;
  if (!repeatable) return;
  args_.assign(args, args + count);
  stream_ = plan.where.id;
  exec_ = run.launched;
  profile_ = plan.profile;
  kept_ = true;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
