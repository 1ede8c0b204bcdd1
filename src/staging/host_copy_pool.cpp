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

HostCopyPool& HostCopyPool::shared() {
  static HostCopyPool* pool = [] {
    const char* setting = read_environment(kCopyWorkersVariable);
    bool valid = true;
    const int workers = shared_workers(setting, std::thread::hardware_concurrency(), &valid);
    if (!valid) {
      log(LogLevel::kWarning, "%s=\"%s\" is not a whole number of threads from 0 to %d; the host copy pool has "
          "%d workers (docs/OPTIONS.md)", kCopyWorkersVariable, setting, kMostWorkers, workers);
    }
    return new HostCopyPool(workers);
  }();
  return *pool;
}

HostCopyPool::~HostCopyPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void HostCopyPool::start_locked() noexcept {
  started_.store(true, std::memory_order_release);
  for (int i = 0; i < max_workers_; ++i) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::system_error& error) {
      // Fewer workers (or none) only slow pageable staging down: callers copy their own tasks.
      log(LogLevel::kWarning, "host copy pool: started %zu of %d worker threads (%s); callers copy the rest",
          threads_.size(), max_workers_, error.what());
      return;
    }
  }
}

int HostCopyPool::workers() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) start_locked();
  return static_cast<int>(threads_.size());
}

void HostCopyPool::announce() noexcept {
  // With sleepers_ read after the epoch moves, and a worker's predicate read after it counts
  // itself a sleeper (both sequentially consistent), either the worker sees the new epoch or this
  // thread sees the sleeper and wakes it; the notify under the mutex cannot fall between a
  // worker's check and its wait.
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
}

void HostCopyPool::begin(CopyBatch& batch, std::size_t ready) noexcept {
  batch.done_.reset(new std::atomic<bool>[batch.tasks_.size()]);
  for (std::size_t i = 0; i < batch.tasks_.size(); ++i) batch.done_[i].store(false, std::memory_order_relaxed);
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
  announce();
}

void HostCopyPool::publish(CopyBatch& batch, std::size_t ready) noexcept {
  // Only the batch's caller publishes, so ready_ only grows.
  ready = std::min(ready, batch.tasks_.size());
  if (ready <= batch.ready_.load(std::memory_order_relaxed)) return;
  batch.ready_.store(ready, std::memory_order_release);
  announce();
}

CopyBatch* HostCopyPool::visit_locked() noexcept {
  for (CopyBatch* batch : batches_) {
    if (batch->next_.load(std::memory_order_relaxed) < batch->ready_.load(std::memory_order_acquire)) {
      batch->visitors_.fetch_add(1, std::memory_order_relaxed);
      return batch;
    }
  }
  return nullptr;
}

void HostCopyPool::work() noexcept {
  for (;;) {
    const std::uint64_t seen = epoch_.load(std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_acquire)) return;
    CopyBatch* batch = nullptr;
    {
      std::lock_guard<SpinLock> lock(list_lock_);
      batch = visit_locked();
    }
    if (batch != nullptr) {
      stay_with(*batch);
      // The batch is not touched after this: finish() may return once no worker visits.
      batch->visitors_.fetch_sub(1, std::memory_order_acq_rel);
      continue;
    }
    // Nothing to claim: spin a while for the next publish, then sleep until one comes.
    const auto give_up = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (epoch_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    if (epoch_.load(std::memory_order_acquire) != seen) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return stopping_.load() || epoch_.load(std::memory_order_seq_cst) != seen; });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    if (stopping_.load()) return;
  }
}

void HostCopyPool::stay_with(CopyBatch& batch) noexcept {
  const std::size_t total = batch.tasks_.size();
  for (;;) {
    std::size_t index = 0;
    while (batch.claim(index)) batch.run(index);
    if (batch.ready_.load(std::memory_order_acquire) >= total) return;  // every task published and claimed
    // More of the batch is still to come (an output's next chunk): wait for it here, where a
    // publish is seen without the list lock, unless another batch publishes first or it is late.
    const std::uint64_t seen = epoch_.load(std::memory_order_acquire);
    const auto give_up = std::chrono::steady_clock::now() + kStayForMore;
    for (;;) {
      if (batch.next_.load(std::memory_order_relaxed) < batch.ready_.load(std::memory_order_acquire)) break;
      if (epoch_.load(std::memory_order_acquire) != seen || std::chrono::steady_clock::now() >= give_up) return;
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
