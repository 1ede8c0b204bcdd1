// The instance's completion thread (triton/src/completion.h, Note [sending from a completion thread]):
// jobs are finished on a thread other than the one that posts them, one at a time, in the order
// posted, each exactly once; the poster goes on while a job is being finished; and every job posted
// is finished before the thread's owner is gone. No server and no GPU.
#include "completion.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using trtet_triton::CompletionThread;

struct Job {
  int id = 0;
  std::unique_ptr<int> payload;  // move-only, as a request handed over is
};

TEST(CompletionThread, FinishesEveryJobOnceInOrderOffThePostersThread) {
  std::vector<int> seen;
  std::vector<std::thread::id> threads;
  constexpr int kJobs = 20000;
  {
    CompletionThread<Job> completer([&](Job& job) {
      seen.push_back(job.id * 1000 + *job.payload);  // only the completion thread writes these
      threads.push_back(std::this_thread::get_id());
    });
    for (int i = 0; i < kJobs; ++i) completer.post(Job{i, std::make_unique<int>(i % 1000)});
  }  // the destructor returns once all are finished
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) ASSERT_EQ(seen[i], i * 1000 + i % 1000) << "job " << i;
  for (const auto& id : threads) ASSERT_NE(id, std::this_thread::get_id());
}

TEST(CompletionThread, ThePosterGoesOnWhileAJobIsFinished) {
  // The first job blocks until the poster says so: post() must return meanwhile, and the jobs posted
  // behind it wait their turn, in order.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_started;
  std::mutex mutex;
  std::vector<int> seen;
  {
    CompletionThread<Job> completer([&](Job& job) {
      if (job.id == 0) {
        first_started.set_value();
        released.wait();
      }
      std::lock_guard<std::mutex> lock(mutex);
      seen.push_back(job.id);
    });
    completer.post(Job{0, std::make_unique<int>(0)});
    first_started.get_future().wait();
    for (int i = 1; i <= 3; ++i) completer.post(Job{i, std::make_unique<int>(0)});  // returns: the thread is busy
    {
      std::lock_guard<std::mutex> lock(mutex);
      EXPECT_TRUE(seen.empty()) << "a job was finished before the one ahead of it";
    }
    release.set_value();
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CompletionThread, JobsPostedJustBeforeTheEndAreFinished) {
  // The owner goes (the instance finalized) right after posting: the thread finishes what it was
  // handed first, with each job's work slow enough that the queue is still full at the end.
  std::atomic<int> finished{0};
  for (int round = 0; round < 50; ++round) {
    finished = 0;
    {
      CompletionThread<Job> completer([&](Job&) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        ++finished;
      });
      for (int i = 0; i < 10; ++i) completer.post(Job{i, std::make_unique<int>(0)});
    }
    ASSERT_EQ(finished.load(), 10) << "round " << round;
  }
}

TEST(CompletionThread, AnIdleThreadStopsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  { CompletionThread<Job> completer([](Job&) {}); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
