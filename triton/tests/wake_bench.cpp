// trtet_triton_wake_bench: how long a thread woken through a condition variable takes to run, on a core
// left idle and on one the backend keeps awake (keep-cores-awake, triton/src/keep_awake.h, Note [cores
// kept awake]). This is the wake-up every served request makes: the frontend's thread, the instance's,
// the instance's again after its stream wait.
//
//   trtet_triton_wake_bench [--wakeups N] [--gap-us G] [--rounds R]
//
// A waker on the first core this process may run on wakes a waiter on the last one every G us (default
// 500, as requests come at 2,000/s), N times a round (default 10,000); rounds alternate idle and kept
// awake, R of each (default 2). Each round prints p50, p99, p99.9 and the maximum of the wake-up
// latency (the waker's notify to the waiter running), and how many wake-ups were overtaken: posted while
// the waiter had not yet run for the one before (a waiter later than the gap, or a waker that woke late
// and caught up); those are counted, not timed. The last line gives the ratio of the p99s, idle / kept
// awake, each the upper median over its rounds. Needs two cores.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "keep_awake.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Round {
  double p50 = 0, p99 = 0, p999 = 0, max = 0;
  std::uint64_t overtaken = 0;
};

void pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

double at(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
}

Round measure(int waker_core, int waiter_core, int wakeups, int gap_us) {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t posted = 0;  // the last wake-up's number (1, 2, ...); 0: none yet
  bool done = false;
  std::vector<Clock::time_point> sent(static_cast<std::size_t>(wakeups) + 1);
  std::vector<double> latency;
  latency.reserve(static_cast<std::size_t>(wakeups));
  Round round;
  std::thread waiter([&] {
    pin(waiter_core);
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m);
    while (true) {
      cv.wait(lock, [&] { return posted != seen || done; });
      if (posted == seen) break;  // done
      const Clock::time_point now = Clock::now();
      // Wake-ups posted while this thread had not yet run again were overtaken: counted, not timed.
      round.overtaken += posted - seen - 1;
      seen = posted;
      latency.push_back(std::chrono::duration<double, std::micro>(now - sent[seen]).count());
    }
  });
  pin(waker_core);
  Clock::time_point next = Clock::now();
  for (int i = 1; i <= wakeups; ++i) {
    next += std::chrono::microseconds(gap_us);
    std::this_thread::sleep_until(next);
    {
      std::lock_guard<std::mutex> lock(m);
      sent[static_cast<std::size_t>(i)] = Clock::now();
      posted = static_cast<std::uint64_t>(i);
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_one();
  waiter.join();
  std::sort(latency.begin(), latency.end());
  if (!latency.empty()) {
    round.p50 = at(latency, 0.50);
    round.p99 = at(latency, 0.99);
    round.p999 = at(latency, 0.999);
    round.max = latency.back();
  }
  return round;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int parse(const char* text, int low, int high, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) {
    std::fprintf(stderr, "wake bench: %s takes a whole number from %d to %d\n", what, low, high);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  int wakeups = 10000;
  int gap_us = 500;
  int rounds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: trtet_triton_wake_bench [--wakeups N] [--gap-us G] [--rounds R]\n");
      return 2;
    }
    if (arg == "--wakeups") {
      wakeups = parse(argv[++i], 10, 10000000, "--wakeups");
    } else if (arg == "--gap-us") {
      gap_us = parse(argv[++i], 10, 1000000, "--gap-us");
    } else if (arg == "--rounds") {
      rounds = parse(argv[++i], 1, 100, "--rounds");
    } else {
      std::fprintf(stderr, "usage: trtet_triton_wake_bench [--wakeups N] [--gap-us G] [--rounds R]\n");
      return 2;
    }
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  }
  if (cores.size() < 2) {
    std::printf("wake bench: skipped (needs two cores; this process may run on %zu)\n", cores.size());
    return 0;
  }
  const int waker = cores.front();
  const int waiter = cores.back();
  std::printf("wake bench: %d wake-ups a round, %d us apart, waker on core %d, waiter on core %d; us\n", wakeups,
              gap_us, waker, waiter);
  std::vector<double> idle_p99, awake_p99;
  for (int r = 0; r < 2 * rounds; ++r) {
    const bool awake = r % 2 == 1;
    trtet_triton::CoresKeptAwake kept;
    std::string why;
    if (awake && !trtet_triton::keep_cores_awake(std::to_string(waiter), kept, why)) {
      std::printf("wake bench: FAILED: %s\n", why.c_str());
      return 1;
    }
    const Round round = measure(waker, waiter, wakeups, gap_us);
    (awake ? awake_p99 : idle_p99).push_back(round.p99);
    std::printf("  %-12s p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %9.1f  overtaken %llu\n",
                awake ? "kept awake" : "idle", round.p50, round.p99, round.p999, round.max,
                static_cast<unsigned long long>(round.overtaken));
  }
  const double idle = median(idle_p99);
  const double awake = median(awake_p99);
  std::printf("wake bench: p99 idle %.1f us, kept awake %.1f us: idle / kept awake %.2fx\n", idle, awake,
              awake > 0 ? idle / awake : 0.0);
  return 0;
}
