#include "wait.h"

#include <chrono>
#include <thread>

namespace trtet_triton {

bool parse_stream_wait(const std::string& text, StreamWait& out) {
  if (text == "sync") out = StreamWait::kSync;
  else if (text == "spin") out = StreamWait::kSpin;
  else if (text == "yield") out = StreamWait::kYield;
  else if (text == "callback") out = StreamWait::kCallback;
  else return false;
  return true;
}

const char* stream_wait_name(StreamWait wait) {
  switch (wait) {
    case StreamWait::kSpin: return "spin";
    case StreamWait::kYield: return "yield";
    case StreamWait::kCallback: return "callback";
    default: return "sync";
  }
}

void CUDART_CB StreamWaiter::done(void* self) {
  auto* waiter = static_cast<StreamWaiter*>(self);
  {
    std::lock_guard<std::mutex> lock(waiter->mutex_);
    ++waiter->finished_;
  }
  waiter->cv_.notify_one();
}

cudaError_t StreamWaiter::wait(cudaStream_t stream) {
  switch (how_) {
    case StreamWait::kSync:
      return cudaStreamSynchronize(stream);
    case StreamWait::kSpin:
    case StreamWait::kYield: {
      cudaError_t e;
      while ((e = cudaStreamQuery(stream)) == cudaErrorNotReady) {
        if (how_ == StreamWait::kYield) std::this_thread::yield();
      }
      return e;
    }
    case StreamWait::kCallback: {
      std::uint64_t target = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        target = ++enqueued_;
      }
      const cudaError_t launched = cudaLaunchHostFunc(stream, &StreamWaiter::done, this);
      if (launched != cudaSuccess) {
        std::lock_guard<std::mutex> lock(mutex_);
        --enqueued_;
        return launched;
      }
      std::unique_lock<std::mutex> lock(mutex_);
      while (finished_ < target) {
        if (cv_.wait_for(lock, std::chrono::milliseconds(2)) == std::cv_status::timeout && finished_ < target) {
          // Not woken yet: a stream that failed may never run the host function.
          lock.unlock();
          const cudaError_t e = cudaStreamQuery(stream);
          lock.lock();
          if (e != cudaSuccess && e != cudaErrorNotReady) return e;
        }
      }
      lock.unlock();
      // The host function ran after the call's work: the stream's state now (an error of the work
      // before it included).
      const cudaError_t e = cudaStreamQuery(stream);
      return e == cudaErrorNotReady ? cudaSuccess : e;
    }
  }
  return cudaStreamSynchronize(stream);
}

}  // namespace trtet_triton
