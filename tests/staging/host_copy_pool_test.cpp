// The host copy pool (src/staging/host_copy_pool.h; Note [copy pool hand-off]) on the CPU:
// every published task copied exactly once and waited for, tasks published in steps, unpublished
// tasks abandoned, several callers' batches at once, a pool with no workers, workers that slept
// between batches woken again, and wide workers that take only wide batches (Note [wide batches]).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "staging/host_copy_pool.h"

namespace {

using torch_tensorrt::executorch_backend::staging::CopyBatch;
using torch_tensorrt::executorch_backend::staging::CopyTask;
using torch_tensorrt::executorch_backend::staging::HostCopyPool;

/// A source of `slices` x `slice` bytes with a pattern of `seed`, a poisoned destination, and one
/// task per slice.
struct Copy {
  Copy(std::size_t slices, std::size_t slice, std::uint8_t seed)
      : from(slices * slice), to(slices * slice, 0xEE), slice(slice) {
    for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::uint8_t>(seed + i * 7 + i / 251);
    for (std::size_t s = 0; s < slices; ++s) tasks.push_back(CopyTask{&to[s * slice], &from[s * slice], slice});
  }
  /// Slices [0, n) equal the source; the rest are still poisoned.
  ::testing::AssertionResult copied_up_to(std::size_t n) const {
    for (std::size_t s = 0; s < tasks.size(); ++s) {
      const bool same = std::memcmp(&to[s * slice], &from[s * slice], slice) == 0;
      const bool poisoned = std::all_of(to.begin() + static_cast<std::ptrdiff_t>(s * slice),
                                        to.begin() + static_cast<std::ptrdiff_t>((s + 1) * slice),
                                        [](std::uint8_t b) { return b == 0xEE; });
      if (s < n && !same) return ::testing::AssertionFailure() << "slice " << s << " not copied";
      if (s >= n && !poisoned) return ::testing::AssertionFailure() << "slice " << s << " copied but never published";
    }
    return ::testing::AssertionSuccess();
  }
  std::vector<std::uint8_t> from, to;
  std::size_t slice;
  std::vector<CopyTask> tasks;
};

TEST(HostCopyPool, EveryPublishedTaskIsCopiedBeforeFinishReturns) {
  HostCopyPool pool(4);
  for (int round = 0; round < 50; ++round) {
    Copy copy(97, 4096 + 64 * static_cast<std::size_t>(round), static_cast<std::uint8_t>(round));
    CopyBatch batch(copy.tasks);
    pool.begin(batch, copy.tasks.size());
    pool.finish(batch);
    ASSERT_TRUE(copy.copied_up_to(copy.tasks.size())) << "round " << round;
  }
  EXPECT_EQ(pool.workers(), 4);
}

TEST(HostCopyPool, HelpUntilDoneReturnsWithThatTaskAndEveryEarlierOneWaitedForInOrder) {
  HostCopyPool pool(3);
  Copy copy(256, 8192, 3);
  CopyBatch batch(copy.tasks);
  pool.begin(batch, copy.tasks.size());
  for (std::size_t t = 0; t < copy.tasks.size(); ++t) {
    pool.help_until_done(batch, t);
    ASSERT_TRUE(batch.done(t)) << "task " << t;
    ASSERT_EQ(std::memcmp(copy.tasks[t].destination, copy.tasks[t].source, copy.slice), 0) << "task " << t;
  }
  pool.finish(batch);
  EXPECT_TRUE(copy.copied_up_to(copy.tasks.size()));
}

TEST(HostCopyPool, TasksPublishedInStepsAreCopiedAndUnpublishedOnesAreAbandoned) {
  HostCopyPool pool(4);
  Copy copy(64, 16384, 9);
  CopyBatch batch(copy.tasks);
  pool.begin(batch, 0);  // nothing ready yet (an output batch before its first chunk lands)
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(copy.copied_up_to(0)) << "a task was copied before it was published";
  for (std::size_t ready = 8; ready <= 40; ready += 8) {
    pool.publish(batch, ready);
    pool.help_until_done(batch, ready - 1);
    pool.publish(batch, ready / 2);  // a smaller count never takes tasks back
  }
  pool.finish(batch);
  EXPECT_TRUE(copy.copied_up_to(40));
}

TEST(HostCopyPool, WithoutWorkersTheCallerCopiesEverything) {
  HostCopyPool pool(0);
  EXPECT_EQ(pool.workers(), 0);
  Copy copy(33, 1000, 5);
  CopyBatch batch(copy.tasks);
  pool.begin(batch, 10);
  pool.help_until_done(batch, 9);
  EXPECT_TRUE(batch.done(9));
  pool.publish(batch, copy.tasks.size());
  pool.help_until_done(batch, 20);
  pool.finish(batch);
  EXPECT_TRUE(copy.copied_up_to(copy.tasks.size()));
}

/// `callers` threads, each running `rounds` batches through `pool`, every other one published a task
/// at a time (an output); copy(c, round) makes caller c's copy of a round. Returns the batches whose
/// copy came out wrong.
template <typename MakeCopy>
int batches_copied_wrong(HostCopyPool& pool, int callers, int rounds, MakeCopy copy_of) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      for (int round = 0; round < rounds; ++round) {
        Copy copy = copy_of(c, round);
        CopyBatch batch(copy.tasks);
        const bool stepwise = (round + c) % 2 == 0;
        pool.begin(batch, stepwise ? 0 : copy.tasks.size());
        if (stepwise) {
          for (std::size_t ready = 1; ready <= copy.tasks.size(); ++ready) pool.publish(batch, ready);
        }
        pool.help_until_done(batch, copy.tasks.size() - 1);
        pool.finish(batch);
        if (!copy.copied_up_to(copy.tasks.size())) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return wrong.load();
}

TEST(HostCopyPool, SeveralCallersBatchesAtOnceEachGetsItsOwnTasksDone) {
  HostCopyPool pool(3);
  EXPECT_EQ(batches_copied_wrong(pool, 6, 40, [](int c, int round) {
              return Copy(17 + static_cast<std::size_t>(c), 2048, static_cast<std::uint8_t>(c * 31 + round));
            }),
            0);
}

TEST(HostCopyPool, WorkersThatWentToSleepAreWokenByTheNextBatch) {
  HostCopyPool pool(2);
  for (int round = 0; round < 3; ++round) {
    // Longer than a worker spins before it sleeps (kSpinBeforeSleep).
    std::this_thread::sleep_for(HostCopyPool::kSpinBeforeSleep * 4);
    Copy copy(200, 65536, static_cast<std::uint8_t>(round));
    CopyBatch batch(copy.tasks);
    pool.begin(batch, copy.tasks.size());
    pool.finish(batch);
    ASSERT_TRUE(copy.copied_up_to(copy.tasks.size())) << "round " << round;
  }
}

TEST(HostCopyPool, APoolWithWorkersAsleepIsDestroyedPromptly) {
  const auto start = std::chrono::steady_clock::now();
  {
    HostCopyPool pool(4);
    EXPECT_EQ(pool.workers(), 4);
    std::this_thread::sleep_for(HostCopyPool::kSpinBeforeSleep * 2);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HostCopyPool, WideWorkersTakeOnlyWideBatchesAndEveryBatchIsCopied) {
  // Batches of at least 256 KiB are wide here. Small batches, from several callers at once with wide
  // ones among them: every task copied, and the wide workers take no task of a small batch.
  constexpr std::size_t kWide = 256 << 10;
  HostCopyPool pool(1, 4, kWide);
  EXPECT_EQ(pool.workers(), 1);
  EXPECT_EQ(pool.wide_workers(), 4);
  for (int round = 0; round < 30; ++round) {
    Copy copy(15, 16384, static_cast<std::uint8_t>(round));  // 240 KiB: not wide
    CopyBatch batch(copy.tasks);
    pool.begin(batch, copy.tasks.size());
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // time for any worker to take some
    pool.finish(batch);
    ASSERT_TRUE(copy.copied_up_to(copy.tasks.size())) << "round " << round;
  }
  EXPECT_EQ(pool.wide_worker_tasks(), 0u) << "a wide worker copied a task of a batch below the wide size";
  // Wide batches, published at once and in steps (an output): the wide workers take part.
  for (int round = 0; round < 10; ++round) {
    Copy copy(64, 65536, static_cast<std::uint8_t>(round));  // 4 MiB
    CopyBatch batch(copy.tasks);
    const bool stepwise = round % 2 == 1;
    pool.begin(batch, stepwise ? 0 : copy.tasks.size());
    if (stepwise) {
      for (std::size_t ready = 8; ready <= copy.tasks.size(); ready += 8) {
        pool.publish(batch, ready);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.finish(batch);
    ASSERT_TRUE(copy.copied_up_to(copy.tasks.size())) << "round " << round;
  }
  EXPECT_GT(pool.wide_worker_tasks(), 0u) << "no wide worker took part in a wide batch";
}

TEST(HostCopyPool, SmallAndWideBatchesOfSeveralCallersAtOnceEachGetsItsOwnTasksDone) {
  HostCopyPool pool(2, 3, 128 << 10);  // a third of the batches wide (320 KiB), the rest 18 KiB
  EXPECT_EQ(batches_copied_wrong(pool, 6, 30, [](int c, int round) {
              const bool wide = (round + c) % 3 == 0;
              return Copy(wide ? 40 : 9, wide ? 8192 : 2048, static_cast<std::uint8_t>(c * 17 + round));
            }),
            0);
}

TEST(HostCopyPool, WideWorkersAsleepAreWokenByAWideBatchAndThePoolIsDestroyedPromptly) {
  const auto start = std::chrono::steady_clock::now();
  {
    HostCopyPool pool(0, 2, 64 << 10);  // only wide workers: a small batch is the caller's alone
    Copy small(4, 4096, 1);
    CopyBatch small_batch(small.tasks);
    pool.begin(small_batch, small.tasks.size());
    pool.finish(small_batch);
    EXPECT_TRUE(small.copied_up_to(small.tasks.size()));
    EXPECT_EQ(pool.wide_worker_tasks(), 0u);
    std::uint64_t taken = 0;
    for (int round = 0; round < 5 && taken == 0; ++round) {
      // Long past the wide workers' spin (kSpinBeforeSleep): they are asleep.
      std::this_thread::sleep_for(HostCopyPool::kSpinBeforeSleep * 200);
      Copy copy(64, 16384, static_cast<std::uint8_t>(round));
      CopyBatch batch(copy.tasks);
      pool.begin(batch, copy.tasks.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the caller leaves them the tasks
      pool.finish(batch);
      ASSERT_TRUE(copy.copied_up_to(copy.tasks.size())) << "round " << round;
      taken = pool.wide_worker_tasks();
    }
    EXPECT_GT(taken, 0u) << "the sleeping wide workers were never woken by a wide batch";
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HostCopyPool, SharedWideWorkersFillUpToTheWideDefaultUnlessTheSettingGivesThePool) {
  // Unset: the wide batch's threads are one per hardware thread but one, at most
  // kDefaultWideBatchWorkers, of which shared_workers() are the workers.
  EXPECT_EQ(HostCopyPool::shared_wide_workers(nullptr, 0), 0);
  EXPECT_EQ(HostCopyPool::shared_wide_workers(nullptr, 2), 0);
  EXPECT_EQ(HostCopyPool::shared_wide_workers(nullptr, 8), 0);
  EXPECT_EQ(HostCopyPool::shared_wide_workers(nullptr, 10), 9 - HostCopyPool::kDefaultWorkers);
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 16) + HostCopyPool::shared_wide_workers(nullptr, 16),
            HostCopyPool::kDefaultWideBatchWorkers);
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 256) + HostCopyPool::shared_wide_workers(nullptr, 256),
            HostCopyPool::kDefaultWideBatchWorkers);
  // A valid TRTET_COPY_WORKERS is the whole pool; an invalid one falls back to the defaults.
  for (const char* setting : {"0", "7", "15"}) EXPECT_EQ(HostCopyPool::shared_wide_workers(setting, 16), 0) << setting;
  EXPECT_EQ(HostCopyPool::shared_wide_workers("seven", 16), HostCopyPool::shared_wide_workers(nullptr, 16));
}

TEST(HostCopyPool, SharedWorkersComeFromTheSettingOrTheHardwareThreads) {
  bool valid = false;
  // Unset: one per hardware thread but one, at most kDefaultWorkers; none where unknown.
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 0, &valid), 0);
  EXPECT_TRUE(valid);
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 1), 0);
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 4), 3);
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 8), std::min(7, HostCopyPool::kDefaultWorkers));
  EXPECT_EQ(HostCopyPool::shared_workers(nullptr, 256), HostCopyPool::kDefaultWorkers);
  // A whole number from 0 to kMostWorkers is taken as it is, whatever the hardware.
  for (const char* setting : {"0", "7", "64"}) {
    EXPECT_EQ(HostCopyPool::shared_workers(setting, 16, &valid), std::atoi(setting)) << setting;
    EXPECT_TRUE(valid) << setting;
  }
  // Anything else falls back to the default and says so.
  for (const char* setting : {"", "-1", "65", "7x", " 7", "seven", "99999999999999999999"}) {
    EXPECT_EQ(HostCopyPool::shared_workers(setting, 16, &valid), HostCopyPool::shared_workers(nullptr, 16))
        << "'" << setting << "'";
    EXPECT_FALSE(valid) << "'" << setting << "'";
  }
}

}  // namespace
