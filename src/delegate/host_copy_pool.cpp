#include "delegate/host_copy_pool.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::delegate {

HostCopyPool& HostCopyPool::shared() {
  // Never destroyed: workers may still be parked when static destructors run.
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

void HostCopyPool::start() {
  threads_.reserve(static_cast<std::size_t>(workers_));
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this, i] { work(i); });
}

void HostCopyPool::work(int index) {
  unsigned long long seen = 0;
  int current_device = -1;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    int device = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      device = device_;
    }
    if (device != current_device) {  // the job's transfers go to the engine's device
      TRTET_CUDA_WARN(cudaSetDevice(device));
      current_device = device;
    }
    (*job)(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void HostCopyPool::run(const std::function<void(int)>& job, int device) {
  if (workers_ == 0) {
    job(0);
    return;
  }
  std::lock_guard<std::mutex> turn(run_mutex_);
  if (threads_.empty()) start();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    device_ = device;
    pending_ = workers_;
    ++generation_;
  }
  wake_.notify_all();
  job(workers_);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

}  // namespace torch_tensorrt::executorch_backend::delegate
