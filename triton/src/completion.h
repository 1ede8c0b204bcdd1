// An instance's completion thread: the requests it hands over are finished there, one at a time, in
// the order handed over (send_from completion_thread; Note [sending from a completion thread]).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace trtet_triton {

// Note [sending from a completion thread]
// ---------------------------------------
// By default an instance's thread sends each response itself (TRITONBACKEND_ResponseSend, where
// Triton's frontend works on the response: 12 to 15 us over HTTP and 40 to 52 us over gRPC on the
// H200, S49), then reports the request's statistics and releases it, and only then takes the next
// request. With `send_from: completion_thread` it hands the finished request to a thread of the
// instance's own instead and takes the next one at once; that thread sends the response, reports
// the statistics and releases the request, in the order the requests were handed over.
// A request is handed over only when nothing of the instance touches it again: its call is done
// (its stream waited for, or its host outputs written on return), its late outputs copied into the
// response and waited for. So the next call may reuse the Module's memory, the instance's scratch and
// its stream while the response goes out. What stays in the instance's thread: the plan set's
// sample and the GPU-time flush (the tracer is the instance's). What moves: the send, the
// statistics, the release, and the request phases' sums (only the completion thread adds to them).
// The statistics are then counted as Triton's TensorRT backend counts, whose completion thread takes
// the end of compute before it sends: compute output runs from the end of the call's work to when the
// completion thread takes the request (the hand-over), and the send itself falls outside Triton's
// figures; the `send` phase counts the hand-over and the send. The batch's statistics are reported
// before its last request is released. The thread stops when the instance is finalized, after every
// request handed to it is finished (Triton finalizes an instance only once each request it handed
// the backend is released, and deletes a model off the thread that released its last request).
template <class Job>
class CompletionThread {
 public:
  using Work = std::function<void(Job&)>;

  // `work` finishes one job; it must not throw.
  explicit CompletionThread(Work work) : work_(std::move(work)), thread_([this] { run(); }) {}
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  // Every job handed over is finished before this returns.
  ~CompletionThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  void post(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  std::thread::id id() const noexcept { return thread_.get_id(); }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      work_(job);
      lock.lock();
    }
  }

  Work work_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once everything above is made
};

}  // namespace trtet_triton
