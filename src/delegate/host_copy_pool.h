// Worker threads that share the host side of pageable staging: memcpy between pageable memory and
// pinned staging, the part of a pageable transfer that one host thread does too slowly
// (trtet-micro --benchmark_filter=HostCopy measures the rate per thread count on a host).
//
// Workers run host memcpy only: every CUDA call (transfers, event waits) stays on the calling
// thread, so work lands on the caller's stream and context, and no worker ever waits for the GPU.
// Calls of several sessions share the workers without taking turns: each posts a batch of tasks,
// takes part in its own batch, and waits only for its own tasks. A session on one green context
// therefore never waits behind another session's engine.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
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
/// caller must wait() before it goes.
class CopyBatch {
 public:
  explicit CopyBatch(std::vector<CopyTask>& tasks) noexcept : tasks_(tasks) {}
  CopyBatch(const CopyBatch&) = delete;             // the pool points at it
  CopyBatch& operator=(const CopyBatch&) = delete;

  /// True once task `index` has been copied.
  bool done(std::size_t index) const noexcept;

 private:
  friend class HostCopyPool;
  std::vector<CopyTask>& tasks_;
  std::size_t ready_ = 0;    ///< tasks [0, ready_) may be taken (guarded by the pool's mutex)
  std::size_t next_ = 0;     ///< the next task to take (guarded by the pool's mutex)
  std::atomic<std::size_t> finished_{0};
  std::unique_ptr<std::atomic<bool>[]> done_;
};

class HostCopyPool {
 public:
  /// Up to `workers` threads besides the callers (0: callers do everything); they start on first use.
  explicit HostCopyPool(int workers) noexcept : max_workers_(workers) {}
  ~HostCopyPool();
  HostCopyPool(const HostCopyPool&) = delete;             // owns threads
  HostCopyPool& operator=(const HostCopyPool&) = delete;

  /// Starts `batch`: its first `ready` tasks may be taken at once.
  void begin(CopyBatch& batch, std::size_t ready) noexcept;
  /// Tasks [0, ready) of `batch` may now be taken.
  void publish(CopyBatch& batch, std::size_t ready) noexcept;
  /// Copies untaken tasks of `batch` on the calling thread until task `index` is done.
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
  /// Takes one ready task of `batch` (pool mutex held); false when none is ready.
  bool take_locked(CopyBatch& batch, std::size_t& index) noexcept;
  static void run(CopyBatch& batch, std::size_t index) noexcept;
  /// Takes and copies one ready task of `batch` on the calling thread (`lock` on the pool's mutex,
  /// released while copying); false when none is ready.
  bool copy_one_locked(CopyBatch& batch, std::unique_lock<std::mutex>& lock) noexcept;

  const int max_workers_;
  bool started_ = false;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;       ///< a task was published, or stop
  std::condition_variable progress_;   ///< a task finished
  std::deque<CopyBatch*> batches_;     ///< batches with tasks not yet taken, oldest first
  bool stopping_ = false;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
