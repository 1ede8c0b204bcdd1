#include "staging/host_copy_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>

#include "common/environment.h"
#include "common/log.h"

namespace torch_tensorrt::executorch_backend::staging {

bool CopyBatch::done(std::size_t index) const noexcept { return done_[index].load(std::memory_order_acquire); }

bool CopyBatch::claim(std::size_t& index, std::size_t below) noexcept {
  std::size_t next = next_.load(std::memory_order_relaxed);
  for (;;) {
    if (next >= below || next >= ready_.load(std::memory_order_acquire)) return false;
    if (next_.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      index = next;
      return true;
    }
  }
}

void CopyBatch::run(std::size_t index) noexcept {
  const CopyTask& task = tasks_[index];
  std::memcpy(task.destination, task.source, task.bytes);
  done_[index].store(true, std::memory_order_release);
}

int HostCopyPool::shared_workers(const char* setting, unsigned hardware_threads, bool* valid) noexcept {
  if (valid != nullptr) *valid = true;
  if (setting != nullptr) {
    // Digits only: strtol would also take leading blanks and a sign.
    const bool digits = setting[0] >= '0' && setting[0] <= '9';
    char* end = nullptr;
    errno = 0;
    const long asked = std::strtol(setting, &end, 10);
    if (digits && *end == '\0' && errno == 0 && asked >= 0 && asked <= kMostWorkers) {
      return static_cast<int>(asked);
    }
    if (valid != nullptr) *valid = false;
  }
  return std::clamp(static_cast<int>(std::min(hardware_threads, 1024u)) - 1, 0, kDefaultWorkers);
}

int HostCopyPool::shared_wide_workers(const char* setting, unsigned hardware_threads) noexcept {
  bool valid = true;
  const int workers = shared_workers(setting, hardware_threads, &valid);
  if (setting != nullptr && valid) return 0;  // the setting is the whole pool
  const int wide = std::clamp(static_cast<int>(std::min(hardware_threads, 1024u)) - 1, 0, kDefaultWideBatchWorkers);
  return std::max(0, wide - workers);
}

HostCopyPool& HostCopyPool::shared() {
  static HostCopyPool* pool = [] {
    const char* setting = read_environment(kCopyWorkersVariable);
    bool valid = true;
    const unsigned hardware = std::thread::hardware_concurrency();
    const int workers = shared_workers(setting, hardware, &valid);
    const int wide = shared_wide_workers(setting, hardware);
    if (!valid) {
      log(LogLevel::kWarning, "%s=\"%s\" is not a whole number of threads from 0 to %d; the host copy pool has "
          "%d workers and %d more for copies of %zu MiB or more (docs/OPTIONS.md)", kCopyWorkersVariable, setting,
          kMostWorkers, workers, wide, kWideBatchBytes >> 20);
    }
    return new HostCopyPool(workers, wide);
  }();
  return *pool;
}

HostCopyPool::~HostCopyPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
  }
  all_.wake.notify_all();
  wide_.wake.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void HostCopyPool::start_locked() noexcept {
  started_.store(true, std::memory_order_release);
  const int total = max_workers_ + max_wide_workers_;
  for (int i = 0; i < total; ++i) {
    const bool wide = i >= max_workers_;
    try {
      threads_.emplace_back([this, wide] { work(wide); });
    } catch (const std::system_error& error) {
      // Fewer workers (or none) only slow pageable staging down: callers copy their own tasks.
      log(LogLevel::kWarning, "host copy pool: started %zu of %d worker threads (%s); callers copy the rest",
          threads_.size(), total, error.what());
      return;
    }
    if (!wide) ++started_workers_;
  }
}

int HostCopyPool::workers() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) start_locked();
  return started_workers_;
}

int HostCopyPool::wide_workers() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) start_locked();
  return static_cast<int>(threads_.size()) - started_workers_;
}

void HostCopyPool::announce(bool wide) noexcept {
  // With the sleepers read after the epoch moves, and a worker's predicate read after it counts
  // itself a sleeper (both sequentially consistent), either the worker sees the new epoch or this
  // thread sees the sleeper and wakes it; the notify under the mutex cannot fall between a
  // worker's check and its wait.
  all_.epoch.fetch_add(1, std::memory_order_seq_cst);
  if (wide) wide_.epoch.fetch_add(1, std::memory_order_seq_cst);
  const bool wake_all = all_.sleepers.load(std::memory_order_seq_cst) > 0;
  const bool wake_wide = wide && wide_.sleepers.load(std::memory_order_seq_cst) > 0;
  if (wake_all || wake_wide) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wake_all) all_.wake.notify_all();
    if (wake_wide) wide_.wake.notify_all();
  }
}

void HostCopyPool::begin(CopyBatch& batch, std::size_t ready) noexcept {
  batch.done_.reset(new std::atomic<bool>[batch.tasks_.size()]);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < batch.tasks_.size(); ++i) {
    batch.done_[i].store(false, std::memory_order_relaxed);
    bytes += batch.tasks_[i].bytes;
  }
  batch.wide_ = max_wide_workers_ > 0 && bytes >= wide_bytes_;
  batch.next_.store(0, std::memory_order_relaxed);
  batch.visitors_.store(0, std::memory_order_relaxed);
  batch.ready_.store(std::min(ready, batch.tasks_.size()), std::memory_order_release);
  if (!started_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_.load(std::memory_order_relaxed)) start_locked();
  }
  {
    std::lock_guard<SpinLock> lock(list_lock_);
    batches_.push_back(&batch);
  }
  // Also with nothing ready yet: sleeping workers wake now and spin, so they are awake when the
  // first tasks are published (an output batch waits for its first chunk's transfer).
  announce(batch.wide_);
}

void HostCopyPool::publish(CopyBatch& batch, std::size_t ready) noexcept {
  // Only the batch's caller publishes, so ready_ only grows.
  ready = std::min(ready, batch.tasks_.size());
  if (ready <= batch.ready_.load(std::memory_order_relaxed)) return;
  batch.ready_.store(ready, std::memory_order_release);
  announce(batch.wide_);
}

CopyBatch* HostCopyPool::visit_locked(bool wide_only) noexcept {
  for (CopyBatch* batch : batches_) {
    if (wide_only && !batch->wide_) continue;
    if (batch->next_.load(std::memory_order_relaxed) < batch->ready_.load(std::memory_order_acquire)) {
      batch->visitors_.fetch_add(1, std::memory_order_relaxed);
      return batch;
    }
  }
  return nullptr;
}

void HostCopyPool::work(bool wide) noexcept {
  Watch& watch = wide ? wide_ : all_;
  for (;;) {
    const std::uint64_t seen = watch.epoch.load(std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_acquire)) return;
    CopyBatch* batch = nullptr;
    {
      std::lock_guard<SpinLock> lock(list_lock_);
      batch = visit_locked(wide);
    }
    if (batch != nullptr) {
      const std::size_t copied = stay_with(*batch, watch);
      if (wide) wide_worker_tasks_.fetch_add(copied, std::memory_order_relaxed);
      // The batch is not touched after this: finish() may return once no worker visits.
      batch->visitors_.fetch_sub(1, std::memory_order_acq_rel);
      continue;
    }
    // Nothing to claim: spin a while for the next publish, then sleep until one comes.
    const auto give_up = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (watch.epoch.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    if (watch.epoch.load(std::memory_order_acquire) != seen) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    watch.sleepers.fetch_add(1, std::memory_order_seq_cst);
    watch.wake.wait(lock, [&] { return stopping_.load() || watch.epoch.load(std::memory_order_seq_cst) != seen; });
    watch.sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (stopping_.load()) return;
  }
}

std::size_t HostCopyPool::stay_with(CopyBatch& batch, const Watch& watch) noexcept {
  const std::size_t total = batch.tasks_.size();
  std::size_t copied = 0;
  for (;;) {
    std::size_t index = 0;
    while (batch.claim(index)) {
      batch.run(index);
      ++copied;
    }
    if (batch.ready_.load(std::memory_order_acquire) >= total) return copied;  // every task published and claimed
    // More of the batch is still to come (an output's next chunk): wait for it here, where a
    // publish is seen without the list lock, unless another batch this worker may take publishes
    // first or it is late.
    const std::uint64_t seen = watch.epoch.load(std::memory_order_acquire);
    const auto give_up = std::chrono::steady_clock::now() + kStayForMore;
    for (;;) {
      if (batch.next_.load(std::memory_order_relaxed) < batch.ready_.load(std::memory_order_acquire)) break;
      if (watch.epoch.load(std::memory_order_acquire) != seen || std::chrono::steady_clock::now() >= give_up) {
        return copied;
      }
      std::this_thread::yield();
    }
  }
}

void HostCopyPool::help_until_done(CopyBatch& batch, std::size_t index) noexcept {
  // The caller copies only tasks up to `index`: one further on would hold up what it waits for
  // (the transfer of the chunk that ends at `index`); the workers take those.
  while (!batch.done(index)) {
    std::size_t mine = 0;
    if (batch.claim(mine, index + 1)) {
      batch.run(mine);
    } else {
      std::this_thread::yield();
    }
  }
}

void HostCopyPool::finish(CopyBatch& batch) noexcept {
  // Copy what is left while the batch is still listed, so the workers keep taking its tasks too
  // (a batch published just before finish, as the last chunk of an output, would otherwise be
  // copied by the caller alone). Tasks never published are abandoned.
  std::size_t mine = 0;
  while (batch.claim(mine)) batch.run(mine);
  {
    std::lock_guard<SpinLock> lock(list_lock_);
    batches_.erase(std::remove(batches_.begin(), batches_.end(), &batch), batches_.end());
  }
  // No worker starts a visit now; wait for the visits under way, which end once every task they
  // claimed is copied.
  while (batch.visitors_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace torch_tensorrt::executorch_backend::staging
