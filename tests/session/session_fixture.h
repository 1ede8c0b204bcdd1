// Shared pieces of the delegate's GPU suites: a session over a test engine, an x/y/out argument
// set with a CPU reference, green-context partitions with their probed SM sets, timing.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "session/owned_tensor.h"
#include "session/session.h"
#include "engines/cuda_test_engine.h"
#include "engines/test_engine.h"
#include "green/split.h"

namespace trtet_test {

using ex::delegate::Session;
using ex::delegate::TensorView;

/// A session over a test engine, plus a non-owning pointer to the engine for its counters.
struct SessionUnderTest {
  std::unique_ptr<Session> session;
  TestEngine* engine = nullptr;
  CudaTestEngine* cuda_engine() const { return dynamic_cast<CudaTestEngine*>(engine); }
};

/// make_test_engine(spec, 0) + Session::initialize(); failures are reported with ADD_FAILURE and
/// leave `session` null (use ASSERT_TRUE(s.session)).
SessionUnderTest make_session(std::string_view spec, ex::delegate::SessionOptions options = {});
/// The same on `device` (make_test_engine(spec, device)).
SessionUnderTest make_session_on(int device, std::string_view spec, ex::delegate::SessionOptions options = {});
/// The same over an engine already made.
SessionUnderTest make_session(std::unique_ptr<TestEngine> engine, ex::delegate::SessionOptions options = {});

/// session.execute(args, count) with `stream` selected for the call (a CudaStreamGuard around it).
ex::Status execute_on(cudaStream_t stream, Session& session, TensorView* args, std::size_t count = 3);

/// Inputs x, y and output out of an elementwise/aux engine, with the CPU reference a*x + b*y.
struct AxpbyIo {
  AxpbyIo(Memory inputs, Memory output, const ex::Shape& shape, std::size_t out_capacity_elements = 0);
  /// Fresh random x and y written, out poisoned, views rebuilt from the tensors.
  void refresh();
  /// The same with the values of `seed` (x: random_floats(n, seed), y: random_floats(n, ~seed)).
  void refresh(std::uint64_t seed);
  TensorView* args() { return views.data(); }
  /// Every element of out equals a*x + b*y (within float rounding).
  ::testing::AssertionResult out_matches(float a = 2.0f, float b = -0.5f) const;

  ex::Shape shape;
  std::unique_ptr<OwnedTensor> x, y, out;
  std::vector<float> xv, yv;
  std::array<TensorView, 3> views{};
};

/// Caller work queued on `stream` before a call: one block spinning `spin_us`, then
/// `values` written into the device tensor `input` from pinned memory that the returned block owns
/// (keep it until `stream` is synchronized). A call ordered after `stream` reads `values`; one that
/// is not reads what `input` held before, while the spin still runs.
ex::Result<MemoryBlock> queue_spin_then_write(cudaStream_t stream, std::int64_t spin_us, OwnedTensor& input,
                                              const std::vector<float>& values);

/// One call recorded into a global-mode capture on `stream` (begun before the call, ended after).
struct CapturedCall {
  ex::Status status;                ///< the call's
  cudaError_t ended = cudaSuccess;  ///< cudaStreamBeginCapture's error, else cudaStreamEndCapture's
  cudaGraph_t graph = nullptr;      ///< the capture's graph (the caller destroys it)
};
CapturedCall capture_call(cudaStream_t stream, Session& session, TensorView* args, std::size_t count = 3);

/// Fresh data in `io` (refresh), session.execute on `stream` under a guard, then the stream
/// synchronized: the call's status, or kInternal when the synchronize fails.
ex::Status run_and_sync(Session& session, AxpbyIo& io, cudaStream_t stream);

/// One replay of a caller's graph `exec` that recorded a call on `io`'s tensors: fresh inputs
/// written into them (io.refresh(), or io.refresh(seed)), the graph launched on `stream`, the stream
/// synchronized, and io.out_matches(); the first of these that fails is the failure.
::testing::AssertionResult replay_and_check(cudaGraphExec_t exec, cudaStream_t stream, AxpbyIo& io);
::testing::AssertionResult replay_and_check(cudaGraphExec_t exec, cudaStream_t stream, AxpbyIo& io,
                                            std::uint64_t seed);

/// `n` fresh random floats (random_floats with a fresh_seed(), tests/common/random.h).
std::vector<float> fresh_random(std::int64_t n);

/// `tensor`'s view with another shape (within its capacity).
TensorView view_of(OwnedTensor& tensor, const ex::Shape& shape);

/// got == expected exactly (float additions in the same order on both sides).
::testing::AssertionResult exactly(const std::vector<float>& got, const std::vector<float>& expected);

/// A non-blocking stream for the test's scope (ok() false when it could not be made).
class OwnedStream {
 public:
  OwnedStream() { status_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~OwnedStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  OwnedStream(const OwnedStream&) = delete;  // one destroy
  OwnedStream& operator=(const OwnedStream&) = delete;
  bool ok() const { return status_ == cudaSuccess && stream_ != nullptr; }
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

/// out[i] vs a*x[i] + b*y[i].
::testing::AssertionResult axpby_matches(const std::vector<float>& out, const std::vector<float>& x,
                                         const std::vector<float>& y, float a, float b);

/// A split of device 0 into a 16-SM partition and the remainder, a stream on each and the SMs
/// the probe measured for each stream.
struct GreenPartitions {
  /// Empty partitions and an ADD_FAILURE on error; tests ASSERT_TRUE(ok()).
  GreenPartitions(unsigned small_sms = 16);
  bool ok() const { return small != nullptr && rest != nullptr; }

  std::vector<ex::green::Partition> partitions;
  cudaStream_t small = nullptr;  ///< on the 16-SM partition (owned by it)
  cudaStream_t rest = nullptr;   ///< on the remainder
  std::vector<int> small_sms;    ///< probed
  std::vector<int> rest_sms;     ///< probed
};

/// True when every element of `subset` is in the sorted `set`.
bool is_subset(const std::vector<int>& subset, const std::vector<int>& set);

/// Makes a green context current on the calling thread for the scope (cuCtxSetCurrent), restoring
/// the previous current context.
class ScopedCurrentContext {
 public:
  explicit ScopedCurrentContext(const ex::green::DriverGreenContext& context);
  ~ScopedCurrentContext();
  ScopedCurrentContext(const ScopedCurrentContext&) = delete;  // one restore per scope
  ScopedCurrentContext& operator=(const ScopedCurrentContext&) = delete;
  bool ok() const { return ok_; }

 private:
  CUcontext previous_ = nullptr;
  bool ok_ = false;
};

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace trtet_test
