// Worker threads that share the host side of pageable staging: memcpy between pageable memory and
// pinned staging, the part of a pageable transfer that one host thread does too slowly
// (trtet-micro --benchmark_filter=HostCopy measures the rate per thread count on a host).
//
// Workers run host memcpy only: every CUDA call (transfers, event waits) stays on the calling
// thread, so work lands on the caller's stream and context, and no worker ever waits for the GPU.
// Calls of several sessions share the workers without taking turns: each posts a batch of tasks,
// takes part in its own batch, and waits only for its own tasks. A session on one green context
// therefore never waits behind another session's engine.
//
// Note [copy pool hand-off]: a batch's tasks are claimed, marked done and waited for through the
// batch's atomics, never the pool's mutex, which guards only the list of batches (taken when a
// batch starts or ends, and when a worker looks for a batch). A worker with nothing to do spins
// for kSpinBeforeSleep before it sleeps, so the phases of one call (the input copies, the engine,
// the output copies) find the workers awake; callers wait for their own tasks by spinning too.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace torch_tensorrt::executorch_backend::delegate {

/// One memcpy of a batch.
struct CopyTask {
  void* destination;
  const void* source;
  std::size_t bytes;
};

/// Tasks of one call, posted to the pool as they become ready. Lives on the caller's stack; the
/// caller must finish() it before it goes.
class CopyBatch {
 public:
  explicit CopyBatch(std::vector<CopyTask>& tasks) noexcept : tasks_(tasks) {}
  CopyBatch(const CopyBatch&) = delete;             // the pool points at it
  CopyBatch& operator=(const CopyBatch&) = delete;

  /// True once task `index` has been copied.
  bool done(std::size_t index) const noexcept;

 private:
  friend class HostCopyPool;
  /// Claims the next published task; false when none is left to claim now.
  bool claim(std::size_t& index) noexcept;
  /// Copies task `index` (claimed) and marks it done.
  void run(std::size_t index) noexcept;

  std::vector<CopyTask>& tasks_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::atomic<std::size_t> ready_{0};     ///< tasks [0, ready_) may be claimed
  std::atomic<std::size_t> next_{0};      ///< tasks [0, next_) are claimed
  std::atomic<std::size_t> finished_{0};  ///< claimed tasks copied
  std::atomic<int> visitors_{0};          ///< workers claiming from the batch (set under the pool's mutex)
};

class HostCopyPool {
 public:
  /// How long an idle worker spins for new tasks before it sleeps (Note [copy pool hand-off]).
  static constexpr std::chrono::microseconds kSpinBeforeSleep{500};

  /// Up to `workers` threads besides the callers (0: callers do everything); they start on first use.
  explicit HostCopyPool(int workers) noexcept : max_workers_(workers) {}
  ~HostCopyPool();
  HostCopyPool(const HostCopyPool&) = delete;             // owns threads
  HostCopyPool& operator=(const HostCopyPool&) = delete;

  /// Starts `batch`: its first `ready` tasks may be taken at once.
  void begin(CopyBatch& batch, std::size_t ready) noexcept;
  /// Tasks [0, ready) of `batch` may now be taken.
  void publish(CopyBatch& batch, std::size_t ready) noexcept;
  /// Copies untaken tasks of `batch` on the calling thread until task `index` (published) is done.
  void help_until_done(CopyBatch& batch, std::size_t index) noexcept;
  /// Copies untaken published tasks of `batch` on the calling thread, waits until every task taken
  /// is done, and detaches the batch from the pool. Tasks never published are not run.
  void finish(CopyBatch& batch) noexcept;

  /// Threads that copy for a batch besides its caller (after start; 0 where none could start).
  int workers() noexcept;

  /// The process's pool, shared by every session: sessions start and end without making or
  /// joining threads. Workers: one per hardware thread but one, at most 15; they sleep between
  /// batches. Never destroyed (workers may be parked while static destructors run).
  static HostCopyPool& shared();

 private:
  void start_locked() noexcept;
  void work() noexcept;
  /// New tasks were published: bumps the epoch idle workers watch, and wakes sleeping ones.
  void announce() noexcept;
  /// A batch with a task to claim, its visitors_ counted (pool mutex held); null when none.
  CopyBatch* visit_locked() noexcept;

  const int max_workers_;
  bool started_ = false;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;       ///< the epoch moved, or stop
  std::deque<CopyBatch*> batches_;     ///< batches being run, oldest first (guarded by mutex_)
  std::atomic<std::uint64_t> epoch_{0};  ///< bumped whenever tasks are published
  std::atomic<int> sleepers_{0};       ///< workers waiting on wake_
  bool stopping_ = false;              ///< guarded by mutex_
};

}  // namespace torch_tensorrt::executorch_backend::delegate
