#include "delegate/host_copy_pool.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <system_error>

#include "common/log.h"

namespace torch_tensorrt::executorch_backend::delegate {

bool CopyBatch::done(std::size_t index) const noexcept { return done_[index].load(std::memory_order_acquire); }

HostCopyPool& HostCopyPool::shared() {
  static HostCopyPool* pool =
      new HostCopyPool(std::clamp(static_cast<int>(std::thread::hardware_concurrency()) - 1, 0, 15));
  return *pool;
}

HostCopyPool::~HostCopyPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void HostCopyPool::start_locked() noexcept {
  started_ = true;
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

void HostCopyPool::begin(CopyBatch& batch, std::size_t ready) noexcept {
  batch.done_.reset(new std::atomic<bool>[batch.tasks_.size()]);
  for (std::size_t i = 0; i < batch.tasks_.size(); ++i) batch.done_[i].store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_) start_locked();
    batch.ready_ = ready;
    batches_.push_back(&batch);
  }
  wake_.notify_all();
}

void HostCopyPool::publish(CopyBatch& batch, std::size_t ready) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.ready_ = std::max(batch.ready_, ready);
  }
  wake_.notify_all();
}

bool HostCopyPool::take_locked(CopyBatch& batch, std::size_t& index) noexcept {
  if (batch.next_ >= batch.ready_) return false;
  index = batch.next_++;
  return true;
}

void HostCopyPool::run(CopyBatch& batch, std::size_t index) noexcept {
  const CopyTask& task = batch.tasks_[index];
  std::memcpy(task.destination, task.source, task.bytes);
  batch.done_[index].store(true, std::memory_order_release);
  batch.finished_.fetch_add(1, std::memory_order_acq_rel);
}

void HostCopyPool::work() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    CopyBatch* batch = nullptr;
    std::size_t index = 0;
    wake_.wait(lock, [&] {
      if (stopping_) return true;
      for (CopyBatch* candidate : batches_) {
        if (take_locked(*candidate, index)) {
          batch = candidate;
          return true;
        }
      }
      return false;
    });
    if (batch == nullptr) return;  // stopping
    lock.unlock();
    run(*batch, index);
    lock.lock();
    progress_.notify_all();
  }
}

bool HostCopyPool::copy_one_locked(CopyBatch& batch, std::unique_lock<std::mutex>& lock) noexcept {
  std::size_t mine = 0;
  if (!take_locked(batch, mine)) return false;
  lock.unlock();
  run(batch, mine);
  lock.lock();
  return true;
}

void HostCopyPool::help_until_done(CopyBatch& batch, std::size_t index) noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!batch.done(index)) {
    if (copy_one_locked(batch, lock)) continue;
    progress_.wait(lock, [&] { return batch.done(index) || batch.next_ < batch.ready_; });
  }
}

void HostCopyPool::finish(CopyBatch& batch) noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  while (copy_one_locked(batch, lock)) {
  }
  // Tasks never published (the caller stopped early) are abandoned; taken ones are waited for.
  progress_.wait(lock, [&] { return batch.finished_.load(std::memory_order_acquire) == batch.next_; });
  batches_.erase(std::remove(batches_.begin(), batches_.end(), &batch), batches_.end());
}

}  // namespace torch_tensorrt::executorch_backend::delegate
