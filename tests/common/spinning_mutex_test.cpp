// The session's lock (common/spinning_mutex.h): mutual exclusion with and without spinning, try_lock,
// and a waiter that spins takes the lock without sleeping; one that does not spin sleeps.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include "common/spinning_mutex.h"

namespace torch_tensorrt::executorch_backend {
namespace {

using std::chrono::microseconds;

// N threads increment a plain counter under the lock, and check that no other thread is inside.
void hammer(SpinningMutex& mutex) {
  constexpr int kThreads = 6, kEach = 5000;
  long counter = 0;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::lock_guard<SpinningMutex> lock(mutex);
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        ++counter;
        // A critical section long enough for another thread to arrive while it is held.
        for (int spin = 0; spin < 200; ++spin) inside.load(std::memory_order_relaxed);
        if (inside.load() != 1) overlaps.fetch_add(1);
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter, static_cast<long>(kThreads) * kEach);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(SpinningMutex, ExcludesWhetherItSpinsOrNot) {
  SpinningMutex spinning(microseconds(200));
  hammer(spinning);
  SpinningMutex sleeping(microseconds(0));
  hammer(sleeping);
}

TEST(SpinningMutex, TryLockFailsWhileHeldAndSucceedsAfter) {
  SpinningMutex mutex(microseconds(50));
  mutex.lock();
  bool other = true;
  std::thread([&] { other = mutex.try_lock(); }).join();
  EXPECT_FALSE(other);
  mutex.unlock();
  std::thread([&] {
    other = mutex.try_lock();
    if (other) mutex.unlock();
  }).join();
  EXPECT_TRUE(other);
}

// How a waiter waited for a lock held 50 ms: its CPU time over the wait, and how many times it gave
// up its core of its own accord (the thread's voluntary context switches: a sleep on the mutex is one;
// being preempted on a busy machine is not, so a spinner's count stays 0 however little CPU it got).
struct Wait {
  double cpu_share = 0;
  long slept = 0;
};

Wait how_a_waiter_waits(microseconds spin) {
  SpinningMutex mutex(spin);
  mutex.lock();
  std::atomic<bool> waiting{false};
  double cpu_s = 0, wall_s = 0;
  long slept = -1;
  std::thread waiter([&] {
    timespec cpu0{}, cpu1{};
    rusage use0{}, use1{};
    getrusage(RUSAGE_THREAD, &use0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    const auto wall0 = std::chrono::steady_clock::now();
    waiting = true;
    mutex.lock();
    const auto wall1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    getrusage(RUSAGE_THREAD, &use1);
    mutex.unlock();
    cpu_s = static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) + 1e-9 * static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec);
    wall_s = std::chrono::duration<double>(wall1 - wall0).count();
    slept = use1.ru_nvcsw - use0.ru_nvcsw;
  });
  while (!waiting) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  mutex.unlock();
  waiter.join();
  EXPECT_GE(wall_s, 0.045);
  return {cpu_s / wall_s, slept};
}

TEST(SpinningMutex, AWaiterSpinsForItsSpinThenSleeps) {
  // Spinning for 2 s, longer than the 50 ms hold: it never sleeps (on a loaded machine it may still get
  // little CPU: the scheduler, not the waiter, decides that, so its share is not asserted).
  EXPECT_EQ(how_a_waiter_waits(microseconds(2'000'000)).slept, 0);
  // No spin: asleep (a machine under load may lend the thread little CPU anyway; the bound is loose).
  const Wait no_spin = how_a_waiter_waits(microseconds(0));
  EXPECT_GE(no_spin.slept, 1);
  EXPECT_LT(no_spin.cpu_share, 0.2);
  // A 1 ms spin, then asleep for the rest of the 50 ms.
  const Wait short_spin = how_a_waiter_waits(microseconds(1000));
  EXPECT_GE(short_spin.slept, 1);
  EXPECT_LT(short_spin.cpu_share, 0.2);
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend
