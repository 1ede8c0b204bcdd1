// How an instance waits for its stream after a call (wait.cpp): the `stream_wait` parameter.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace trtet_triton {

// Note [waiting for the stream]
// -----------------------------
// After a request's call the instance waits for its stream (the engine, the staging copies), then
// answers. How it waits is the `stream_wait` parameter:
//   sync      cudaStreamSynchronize (default): CUDA's own wait, which spins while the process has
//             fewer busy contexts than cores and yields otherwise (the device's schedule flags; the
//             backend changes no device setting)
//   spin      cudaStreamQuery in a loop: the lowest wake-up latency, one host core busy per waiting
//             instance
//   yield     the same, yielding the core between queries: near spin's latency when cores are free,
//             and other threads run when they are not
//   callback  a host function enqueued after the call (cudaLaunchHostFunc) wakes the instance's thread:
//             no core busy while the GPU works, one wake-up through CUDA's callback thread per call
// Every way returns the stream's error where it failed (a sticky one included: Note [the fault
// domain]); the callback way also queries the stream while it waits, so a stream that failed before
// the host function ran does not leave the instance waiting.
enum class StreamWait { kSync, kSpin, kYield, kCallback };

bool parse_stream_wait(const std::string& text, StreamWait& out);
const char* stream_wait_name(StreamWait wait);

// A waiter per instance (the callback's state lives as long as the instance).
class StreamWaiter {
 public:
  explicit StreamWaiter(StreamWait how = StreamWait::kSync) : how_(how) {}
  StreamWaiter(const StreamWaiter&) = delete;
  StreamWaiter& operator=(const StreamWaiter&) = delete;
  // Waits until the work enqueued on `stream` so far is done; cudaSuccess or the stream's error.
  cudaError_t wait(cudaStream_t stream);

 private:
  static void CUDART_CB done(void* self);
  StreamWait how_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t enqueued_ = 0;  // host functions enqueued
  std::uint64_t finished_ = 0;  // host functions run
};

}  // namespace trtet_triton
