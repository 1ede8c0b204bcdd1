// The executor's concurrent steps: calls of one session from several threads, each on a stream of
// its own, every call checked against the oracle once all threads are done.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "contract_fuzz/executor.h"
#include "contract_fuzz/executor_steps.h"
#include "contract_fuzz/gpu_world.h"

namespace trtet_test::fuzz {

Verdict Executor::concurrent_step(const ConcurrentStep& step) {
  SessionSlot& slot = *sessions_[static_cast<std::size_t>(step.session)];
  const int threads = static_cast<int>(step.threads.size());
  std::vector<std::vector<std::unique_ptr<CallArgs>>> args(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    for (const CallPlan& plan : step.threads[static_cast<std::size_t>(t)]) {
      std::unique_ptr<CallArgs> a;
      if (Verdict v = prepare(slot, plan, 1 + t, a)) return v;
      args[static_cast<std::size_t>(t)].push_back(std::move(a));
    }
  }
  const Counters before = counters(slot);
  slot.sm_partition = kSmMixed;
  std::vector<std::vector<char>> succeeded(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) succeeded[static_cast<std::size_t>(t)].assign(args[static_cast<std::size_t>(t)].size(), 0);
  std::atomic<bool> destroyed{false};
  std::atomic<std::uint64_t> successes{0};
  std::mutex mutex;
  std::condition_variable go;
  bool started = false;
  Verdict first;
  auto worker = [&](int t) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      go.wait(lock, [&] { return started; });
    }
    for (std::size_t c = 0; c < args[static_cast<std::size_t>(t)].size(); ++c) {
      auto& a = args[static_cast<std::size_t>(t)][c];
      const bool after_destroy = destroyed.load();
      const CallPlan& plan = a->plan();
      const char* reason = "";
      Expect expect = expectation(slot, *a, false, &reason);
      if (after_destroy) {
        expect = Expect::kFailure;
        reason = "the session was destroyed before the call began";
      } else if (step.destroy_during && expect == Expect::kSuccess) {
        expect = Expect::kEither;  // the destroy may win the race
      }
      CallContext context;
      context.guard = plan.guard;
      context.stream = streams_->get(plan.stream);
      context.io = world_.io(1 + t);
      context.scribble = plan.scribble;
      context.failure_reason = reason;
      context.alias_values = !plan.shared_cache;  // other threads update it too: the sum is checked at the end
      Verdict v;
      const ex::Status queued = a->queue_caller_work(ordered_stream(plan));  // this thread's per-thread stream
      if (!queued.ok()) v = Failure{Category::kHarness, "queueing the caller's work: " + queued.to_string()};
      ex::Status status = ex::make_error(ex::ErrorCode::kInternal, "not called");
      if (!v) {
        status = execute(*slot.session, a->views(), a->count(), plan.guard, context.stream);
        if (status.ok()) {
          ++successes;
          succeeded[static_cast<std::size_t>(t)][c] = 1;
        }
        v = check_call(*a, status, expect, context, tally_);
      }
      if (v) {
        v->message = "thread " + std::to_string(t) + ": " + v->message;
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = v;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  {
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
  }
  go.notify_all();
  if (step.destroy_during) {
    std::this_thread::sleep_for(std::chrono::microseconds(step.destroy_delay_us));
    slot.session->destroy();
    destroyed.store(true);
  }
  for (std::thread& t : pool) t.join();
  if (step.destroy_during) {
    slot.alive = false;
    slot.engine = nullptr;
    retire_graphs_of(step.session);
  } else if (!first) {
    first = check_counters(slot, before, successes.load(), successes.load(), "concurrent calls");
    for (int t = 0; t < threads; ++t) {
      for (std::size_t c = 0; c < args[static_cast<std::size_t>(t)].size(); ++c) {
        if (succeeded[static_cast<std::size_t>(t)][c] != 0) note_profile_used(slot, *args[static_cast<std::size_t>(t)][c]);
      }
    }
  }
  if (!first && slot.cache) {
    // The shared cache: every successful call's update, in whatever order they landed. Each thread
    // waited for its own calls only; the last call queued followed every earlier one.
    bool shared = false;
    for (int t = 0; t < threads; ++t) {
      for (std::size_t c = 0; c < args[static_cast<std::size_t>(t)].size(); ++c) {
        const CallArgs& a = *args[static_cast<std::size_t>(t)][c];
        if (!a.plan().shared_cache) continue;
        shared = true;
        if (succeeded[static_cast<std::size_t>(t)][c] != 0) {
          slot.cache->apply(a.inputs()[static_cast<std::size_t>(slot.model.x_binding())]);
        }
      }
    }
    if (shared) first = check_shared_cache(slot, "after concurrent calls updated it from several threads and streams");
  }
  return first;
}

}  // namespace trtet_test::fuzz
