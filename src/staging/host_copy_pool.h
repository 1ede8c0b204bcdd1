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
// batch's atomics. The list of batches is guarded by a spin lock, held for a few loads while a
// batch starts or ends and while a worker looks for a batch: when a chunk's output lands, every
// idle worker looks at once, and a sleeping mutex would hand itself from worker to worker through
// the kernel. A worker that has copied every published task of a batch whose other tasks are still
// to come (an output, published chunk by chunk as each lands) stays with it for up to kStayForMore,
// watching for the next publish without any lock; it leaves sooner when another batch publishes,
// so a session's workers never wait for one call's GPU work while another call has tasks ready.
// A worker with nothing to do spins for kSpinBeforeSleep before it sleeps on a condition
// variable, so the phases of one call (the input copies, the engine, the output copies) find the
// workers awake; callers wait for their own tasks by spinning too. finish() copies the caller's
// last tasks while the batch is still listed, so the workers take them too: a caller is never left
// alone with an output's last chunk.
//
// Note [wide batches]: how many threads a copy wants depends on its size. A small copy (a 4 MiB
// tensor) is done sooner by a few threads, and more threads waking for it take cores from the
// caller and from other sessions; a large one (64 MiB) is bound by how many threads copy. So the
// pool has two kinds of workers: the workers, which take every batch, and the wide workers, which
// take only batches of at least `wide_bytes` (wide batches) and watch an epoch of their own, so a
// small batch's publish never wakes them. A small batch sees exactly the pool it would see without
// wide workers.
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

namespace torch_tensorrt::executorch_backend::staging {

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
  /// Claims the next published task if its index is below `below`; false when there is none to
  /// claim now.
  bool claim(std::size_t& index, std::size_t below = static_cast<std::size_t>(-1)) noexcept;
  /// Copies task `index` (claimed) and marks it done.
  void run(std::size_t index) noexcept;

  std::vector<CopyTask>& tasks_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  bool wide_ = false;                     ///< at least the pool's wide_bytes (Note [wide batches]); set by begin()
  std::atomic<std::size_t> ready_{0};     ///< tasks [0, ready_) may be claimed
  std::atomic<std::size_t> next_{0};      ///< tasks [0, next_) are claimed
  /// Workers claiming from the batch (counted under the pool's list lock). Workers claim only while
  /// counted and copy what they claimed before they leave, so once the batch is off the list and
  /// no worker visits, every claimed task is copied.
  std::atomic<int> visitors_{0};
};

/// A lock for a few loads and stores: spins (yielding) instead of sleeping.
class SpinLock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire)) {
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

class HostCopyPool {
 public:
  /// How long an idle worker spins for new tasks before it sleeps (Note [copy pool hand-off]):
  /// longer than the gap between a call's input copies and its first output chunk for engines of
  /// tens of microseconds, short enough that idle workers do not keep their cores busy between calls.
  static constexpr std::chrono::microseconds kSpinBeforeSleep{100};
  /// How long a worker that copied all of a batch's published tasks waits in the batch for more
  /// (Note [copy pool hand-off]).
  static constexpr std::chrono::microseconds kStayForMore{200};

  /// A batch of at least this many bytes is wide by default (Note [wide batches]): above the 4 MiB
  /// tensors of the isolation and first-call benchmarks, below host_staging's 64 MiB.
  static constexpr std::size_t kWideBatchBytes = std::size_t{16} << 20;

  /// Up to `workers` threads besides the callers (0: callers do everything), and up to
  /// `wide_workers` more that copy only batches of at least `wide_bytes` (Note [wide batches]);
  /// they start on first use.
  explicit HostCopyPool(int workers, int wide_workers = 0, std::size_t wide_bytes = kWideBatchBytes) noexcept
      : max_workers_(workers), max_wide_workers_(wide_workers), wide_bytes_(wide_bytes) {}
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

  /// Threads that copy for every batch besides its caller (after start; 0 where none could start).
  int workers() noexcept;
  /// Threads that copy for wide batches only (after start).
  int wide_workers() noexcept;
  /// Tasks the wide workers have copied so far (what they took on; tests and benchmarks read it).
  std::uint64_t wide_worker_tasks() const noexcept { return wide_worker_tasks_.load(std::memory_order_relaxed); }

  /// The process's pool, shared by every session: sessions start and end without making or
  /// joining threads. Workers: shared_workers(TRTET_COPY_WORKERS, hardware threads), and
  /// shared_wide_workers(the same); they sleep between batches. Never destroyed (workers may be
  /// parked while static destructors run).
  static HostCopyPool& shared();

  /// Workers of the shared pool by default: one per hardware thread but one, at most this many
  /// (with the calling thread, 8 threads copy). More threads than the copy needs contend for the
  /// host's memory and cores with the caller and the driver (docs/PERFORMANCE.md, "The copy pool's
  /// size").
  static constexpr int kDefaultWorkers = 7;
  /// The most workers TRTET_COPY_WORKERS may ask for.
  static constexpr int kMostWorkers = 64;
  /// The shared pool's workers: `setting` (the environment variable TRTET_COPY_WORKERS; null where
  /// unset) where it is a whole number from 0 to kMostWorkers, else the default for
  /// `hardware_threads` (0: unknown, then no workers). `valid` says whether a setting given was used.
  static int shared_workers(const char* setting, unsigned hardware_threads, bool* valid = nullptr) noexcept;
  /// Threads that copy a wide batch besides its caller, by default: one per hardware thread but
  /// one, at most this many (S45 on the 16-core H200: 11 workers staged 64 MiB closest to the host's
  /// limit, and 7 and 15 less close; docs/PERFORMANCE.md, "The copy pool's size").
  static constexpr int kDefaultWideBatchWorkers = 11;
  /// The shared pool's wide workers: none where TRTET_COPY_WORKERS (`setting`) is given and valid
  /// (it sets the whole pool), else kDefaultWideBatchWorkers less the workers, for `hardware_threads`.
  static int shared_wide_workers(const char* setting, unsigned hardware_threads) noexcept;

 private:
  /// What one kind of worker watches (Note [wide batches]): the epoch bumped when tasks it may take
  /// are published, its sleepers and their condition variable.
  struct Watch {
    std::atomic<std::uint64_t> epoch{0};
    std::atomic<int> sleepers{0};
    std::condition_variable wake;  ///< the epoch moved, or stop (with mutex_)
  };

  void start_locked() noexcept;
  void work(bool wide) noexcept;
  /// New tasks of a batch (wide or not) were published: bumps the epochs of the workers that may
  /// take them, and wakes those asleep.
  void announce(bool wide) noexcept;
  /// A batch with a task to claim (a wide one, for a wide worker), its visitors_ counted (list_lock_
  /// held); null when none.
  CopyBatch* visit_locked(bool wide_only) noexcept;
  /// A worker's visit: copies `batch`'s tasks as they are published, staying while more may come
  /// and nothing else is published that `watch` sees. Returns the tasks it copied.
  std::size_t stay_with(CopyBatch& batch, const Watch& watch) noexcept;

  const int max_workers_;
  const int max_wide_workers_;
  const std::size_t wide_bytes_;
  std::mutex mutex_;                   ///< guards started_, threads_ and started_workers_; pairs with the wakes
  std::atomic<bool> started_{false};  ///< written under mutex_
  std::vector<std::thread> threads_;  ///< the workers, then the wide workers
  int started_workers_ = 0;           ///< of threads_, the workers (the rest are wide)
  SpinLock list_lock_;
  std::deque<CopyBatch*> batches_;     ///< batches being run, oldest first (guarded by list_lock_)
  Watch all_;                          ///< every publish: the workers watch it
  Watch wide_;                         ///< publishes of wide batches: the wide workers watch it
  std::atomic<std::uint64_t> wide_worker_tasks_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace torch_tensorrt::executorch_backend::staging
