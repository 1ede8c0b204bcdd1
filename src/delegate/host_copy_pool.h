// Worker threads that share the host side of staging: one host thread copies pageable memory into
// pinned memory at about 6 GB/s on the H200's host, eight at about 51 GB/s (trtet-micro
// --benchmark_filter=HostCopy), while a 64 MiB transfer runs at 55 GB/s. Each worker copies its
// share of the chunks and queues each chunk's transfer as soon as it is copied.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace torch_tensorrt::executorch_backend::delegate {

class HostCopyPool {
 public:
  /// `workers` threads besides the caller's (0: the caller does everything); they start on the
  /// first run().
  explicit HostCopyPool(int workers) noexcept : workers_(workers) {}
  ~HostCopyPool();
  HostCopyPool(const HostCopyPool&) = delete;             // owns threads
  HostCopyPool& operator=(const HostCopyPool&) = delete;

  /// Participants in a run: the workers and the calling thread.
  int parallelism() const noexcept { return workers_ + 1; }

  /// Runs job(i) for i in [0, parallelism()) concurrently, the caller taking the last index, with
  /// `device` current on every worker, and returns when all are done. Runs of several callers take
  /// turns (host memory bandwidth is shared anyway). Jobs must not throw.
  void run(const std::function<void(int)>& job, int device);

  /// The process's pool, shared by every session: sessions start and end without making or
  /// joining threads. Workers: one per hardware thread but the caller's, at most 15; they sleep
  /// between runs.
  static HostCopyPool& shared();

 private:
  void start();
  void work(int index);

  const int workers_;
  int device_ = 0;
  std::vector<std::thread> threads_;
  std::mutex run_mutex_;  ///< one run at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  unsigned long long generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
