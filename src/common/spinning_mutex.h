// A mutex whose lock spins a bounded while before it sleeps (Note [a lock that spins first]).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace torch_tensorrt::executorch_backend {

// Note [a lock that spins first]
// ------------------------------
// The session's lock is held about 15-25 us per call and, with several threads calling one session,
// is handed from thread to thread back to back. A std::mutex puts a waiter to sleep in the kernel at
// once, and waking it takes several microseconds after the unlock (measured on the H200's host:
// about 7 us a handoff, a quarter of a call's time once four threads pipeline calls), during which
// the lock is free and nobody holds it. This lock first spins for up to `spin` on a flag it keeps
// beside the mutex (a read, so waiting threads do not take the cache line from the holder), trying
// the mutex only when the flag says it is free; after `spin` it sleeps on the mutex as a std::mutex
// does. A waiter spinning when the lock is released takes it within a few hundred nanoseconds.
// Spinning costs a core per waiter for at most `spin`; zero spins not at all. It satisfies
// Lockable (std::lock_guard).
class SpinningMutex {
 public:
  explicit SpinningMutex(std::chrono::microseconds spin = std::chrono::microseconds(0)) noexcept : spin_(spin) {}
  SpinningMutex(const SpinningMutex&) = delete;
  SpinningMutex& operator=(const SpinningMutex&) = delete;

  void lock() {
    if (try_lock()) return;
    if (spin_.count() > 0) {
      const auto deadline = std::chrono::steady_clock::now() + spin_;
      for (unsigned i = 1;; ++i) {
        if (!held_.load(std::memory_order_relaxed) && try_lock()) return;
        relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;  // a clock read per 64 spins
      }
    }
    mutex_.lock();
    held_.store(true, std::memory_order_relaxed);
  }

  bool try_lock() noexcept {
    if (!mutex_.try_lock()) return false;
    held_.store(true, std::memory_order_relaxed);
    return true;
  }

  void unlock() noexcept {
    held_.store(false, std::memory_order_relaxed);
    mutex_.unlock();
  }

 private:
  static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#else
    std::this_thread::yield();
#endif
  }

  std::mutex mutex_;
  std::atomic<bool> held_{false};  ///< a hint for spinners only; the mutex decides
  const std::chrono::microseconds spin_;
};

}  // namespace torch_tensorrt::executorch_backend
