// Consecutive calls: ordered on the GPU across streams (event wait, counted), a staging slot reused
// only after the engine that reads it, pipelined without a host wait on one stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "delegate/session_fixture.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

using OrderingGpu = StreamsGpuTest<2>;

// The aliasing engine spins 20 ms before it reads the cache: two calls on different streams give
// cache + x1 + x2 only if the second waits for the first on the GPU.
TEST_F(OrderingGpu, CallsOnTwoStreamsAreOrderedByEvent) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  auto s = make_session("aliasing n=4096 spin_us=20000");
  ASSERT_TRUE(s.session);
  OwnedTensor cache(Memory::kDevice, Shape{4096}), x1(Memory::kDevice, Shape{4096}), x2(Memory::kDevice, Shape{4096});
  OwnedTensor out(Memory::kDevice, Shape{4096});
  const auto c = random_floats(4096, fresh_seed()), v1 = random_floats(4096, fresh_seed()),
             v2 = random_floats(4096, fresh_seed());
  cache.write(c);
  x1.write(v1);
  x2.write(v2);
  const auto waits_before = s.session->stats().cross_stream_waits;
  const auto start = Clock::now();
  {
    CudaStreamGuard guard(streams_[0]);
    TensorView args[3] = {cache.view(), x1.view(), out.view()};
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  {
    CudaStreamGuard guard(streams_[1]);
    TensorView args[3] = {cache.view(), x2.view(), out.view()};
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  EXPECT_LT(ms_since(start), 10.0) << "the second call waited on the host";
  EXPECT_EQ(s.session->stats().cross_stream_waits, waits_before + 1);
  ASSERT_EQ(cudaStreamSynchronize(streams_[1]), cudaSuccess);  // only the second stream
  EXPECT_GE(ms_since(start), 39.0) << "the two 20 ms calls overlapped";
  EXPECT_EQ(cudaStreamQuery(streams_[0]), cudaSuccess) << "the second call finished before the first";
  const auto result = cache.read();
  for (std::size_t i = 0; i < result.size(); ++i) {
    ASSERT_EQ(result[i], (c[i] + v1[i]) + v2[i]) << i;
  }
}

// Ten calls alternating between two streams, each taking the previous call's output as its input x,
// queued without a sync between them behind 20 ms of caller work on stream 0: every call's engine
// must wait on the GPU for the previous one (a counted cross-stream wait), or it reads an output
// not yet written.
TEST_F(OrderingGpu, AlternatingStreamsGiveRightResults) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=1000");
  ASSERT_TRUE(s.session);
  constexpr int kCalls = 10;
  const Shape shape{16, 512};
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  OwnedTensor x(Memory::kDevice, shape);
  const std::vector<float> xv = random_floats(n, fresh_seed());
  x.write(xv);
  std::vector<std::unique_ptr<OwnedTensor>> ys, outs;
  std::vector<std::vector<float>> yvs;
  for (int call = 0; call < kCalls; ++call) {
    ys.push_back(std::make_unique<OwnedTensor>(Memory::kDevice, shape));
    outs.push_back(std::make_unique<OwnedTensor>(Memory::kDevice, shape));
    yvs.push_back(random_floats(n, fresh_seed()));
    ys.back()->write(yvs.back());
    outs.back()->poison();
  }
  TRTET_ASSERT_OK(launch_spin(20'000'000, 1, streams_[0]));  // the caller's work ahead of the first call
  for (int call = 0; call < kCalls; ++call) {
    OwnedTensor& input = call == 0 ? x : *outs[static_cast<std::size_t>(call - 1)];
    TensorView args[3] = {input.view(), ys[static_cast<std::size_t>(call)]->view(),
                          outs[static_cast<std::size_t>(call)]->view()};
    CudaStreamGuard guard(streams_[call % 2]);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  EXPECT_EQ(s.session->stats().cross_stream_waits, 9u);
  for (cudaStream_t stream : streams_) ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> input = xv;
  for (int call = 0; call < kCalls; ++call) {
    const std::vector<float> out = outs[static_cast<std::size_t>(call)]->read();
    ASSERT_TRUE(axpby_matches(out, input, yvs[static_cast<std::size_t>(call)], 2.0f, -0.5f))
        << "call " << call << " did not wait for the previous call on the other stream";
    input = out;
  }
}

// One staging slot (staging_slots = 1) and pinned inputs from two streams: the second call's copies
// into the slot must wait for the first call's engine, whose second kernel reads the slot again
// after a 20 ms spin (kernels=2), while the first call has long returned (its inputs consumed).
TEST_F(OrderingGpu, AStagingSlotIsRewrittenOnlyAfterTheEngineThatReadsIt) {
  ex::delegate::SessionOptions options;
  options.staging_slots = 1;
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000 kernels=2", options);
  ASSERT_TRUE(s.session);
  AxpbyIo first(Memory::kPinned, Memory::kDevice, Shape{16, 512});
  AxpbyIo second(Memory::kPinned, Memory::kDevice, Shape{16, 512});
  TRTET_ASSERT_OK(run_and_sync(*s.session, first, streams_[0]));  // makes the slot's staging
  first.refresh();
  {
    CudaStreamGuard guard(streams_[0]);
    TRTET_ASSERT_OK(s.session->execute(first.args(), 3));  // returns once its inputs are in the slot
  }
  {
    CudaStreamGuard guard(streams_[1]);
    TRTET_ASSERT_OK(s.session->execute(second.args(), 3));  // the same slot, from another stream
  }
  for (cudaStream_t stream : streams_) ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_TRUE(first.out_matches()) << "the second call's inputs overwrote the slot under the first call's engine";
  EXPECT_TRUE(second.out_matches());
  EXPECT_GE(s.session->stats().cross_stream_waits, 1u);
}

// 50 calls of a 2 ms engine on one stream queue without waiting: the host is done long before
// the GPU, and no cross-stream wait is counted.
TEST_F(OrderingGpu, BackToBackCallsOnOneStreamDoNotWaitOnTheHost) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=2000");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{16, 512});
  {
    CudaStreamGuard guard(streams_[0]);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));  // warm-up
  }
  ASSERT_EQ(cudaStreamSynchronize(streams_[0]), cudaSuccess);
  io.refresh();
  double longest = 0;
  const auto start = Clock::now();
  {
    CudaStreamGuard guard(streams_[0]);
    for (int call = 0; call < 50; ++call) {
      const auto call_start = Clock::now();
      TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
      longest = std::max(longest, ms_since(call_start));
    }
  }
  const double host_ms = ms_since(start);
  EXPECT_LT(host_ms, 25.0) << "50 calls of a 2 ms engine took the host " << host_ms << " ms: it waited";
  EXPECT_LT(longest, 1.0);
  EXPECT_EQ(cudaStreamQuery(streams_[0]), cudaErrorNotReady);
  EXPECT_EQ(s.session->stats().cross_stream_waits, 0u);
  ASSERT_EQ(cudaStreamSynchronize(streams_[0]), cudaSuccess);
  EXPECT_GE(ms_since(start), 99.0);
  EXPECT_TRUE(io.out_matches());
  EXPECT_EQ(s.session->stats().calls, 51u);
}

}  // namespace
}  // namespace trtet_test
