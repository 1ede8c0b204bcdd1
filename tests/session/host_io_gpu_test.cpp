// Host I/O without a wait of the caller's: pageable inputs and outputs are right when the call
// returns, with no guard (the chunked pageable staging ordered with the engine on the caller's
// stream) and with more pageable chunks in one call than a tensor takes alone (every output's
// chunk events in range). Outputs poisoned first, compared with a CPU reference on fresh data.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/random.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "staging/layout.h"
#include "engines/multi_output_engine.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

/// got[i] == a * x[i] exactly (one float multiply on both sides).
::testing::AssertionResult scaled_matches(const std::vector<float>& got, const std::vector<float>& x, float a) {
  if (got.size() != x.size()) return ::testing::AssertionFailure() << "got " << got.size() << " elements, x " << x.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float expected = a * x[i];
    if (got[i] != expected) {
      return ::testing::AssertionFailure() << "element " << i << " = " << got[i] << ", expected " << expected
                                           << (got[i] == kPoison ? " (still poison: never written)" : "");
    }
  }
  return ::testing::AssertionSuccess();
}

using HostIoGpu = StreamGpuTest;

// No guard, pageable host input and output: "the engine runs on cudaStreamPerThread; execute()
// returns when every output is ready". Each chunk's transfer is ordered with the engine on the
// caller's per-thread stream, not on a host-copy worker's own per-thread stream (queued there, the
// engine would read staging before its chunk landed). 20 calls, fresh
// data each, checked right after return.
class PageableNoGuardGpu : public StreamGpuTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(PageableNoGuardGpu, EveryCallOfFreshDataIsRightOnReturn) {
  const auto n = static_cast<std::int64_t>(GetParam() / sizeof(float));
  auto s = make_session("elementwise min=1 max=16777216");
  ASSERT_TRUE(s.session);
  OwnedTensor x(Memory::kPageable, Shape{n}), y(Memory::kPageable, Shape{n}), out(Memory::kPageable, Shape{n});
  ASSERT_TRUE(x.status().ok() && y.status().ok() && out.status().ok()) << "allocation failed";
  std::vector<float> xv(static_cast<std::size_t>(n)), yv(static_cast<std::size_t>(n));
  for (int call = 0; call < 20; ++call) {
    fill_random(xv, fresh_seed());
    fill_random(yv, fresh_seed());
    x.write(xv);
    y.write(yv);
    out.poison();
    TensorView args[3] = {x.view(), y.view(), out.view()};
    TRTET_ASSERT_OK(s.session->execute(args, 3));  // no guard
    ASSERT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f))
        << "call " << call << " with " << (GetParam() >> 20) << " MiB of pageable input and output and no guard";
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, PageableNoGuardGpu,
                         ::testing::Values(std::size_t{4} << 20, std::size_t{64} << 20),
                         [](const auto& info) { return std::to_string(info.param >> 20) + "MiB"; });

// Several large pageable outputs in one call need more chunk events, all outputs together, than
// one tensor does; every output's chunks get events of their own, the second and third outputs'
// within the session's events, never past their end. The boundary, from the layout
// (staging/layout.h): each output of kMaxChunks * kMinChunk bytes takes the most chunks a
// tensor takes (kMaxChunks) of the smallest size; a first call of a quarter of that needs at most
// kMaxChunks events in all, then calls of the full size need kOutputs * kMaxChunks. Right outputs,
// no crash.
TEST_F(HostIoGpu, ThreeLargePageableOutputsInOneCallAreRight) {
  using ex::staging::chunk_bytes;
  using ex::staging::kMaxChunks;
  using ex::staging::kMinChunk;
  constexpr std::size_t kBytes = kMaxChunks * kMinChunk;
  static_assert(chunk_bytes(kBytes) == kMinChunk && kBytes / chunk_bytes(kBytes) == kMaxChunks,
                "an output of kMaxChunks * kMinChunk bytes moves in kMaxChunks chunks of kMinChunk");
  constexpr std::int64_t kN = static_cast<std::int64_t>(kBytes / sizeof(float));
  constexpr int kOutputs = 3;
  auto chunks = [](std::int64_t n) {
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    return kOutputs * ((bytes + chunk_bytes(bytes) - 1) / chunk_bytes(bytes));
  };
  ASSERT_LE(chunks(kN / 4), kMaxChunks);
  ASSERT_EQ(chunks(kN), kOutputs * kMaxChunks);
  auto engine = MultiOutputEngine::create(0, Shape{1}, Shape{kN}, kOutputs);
  TRTET_ASSERT_OK(engine);
  auto s = make_session(std::unique_ptr<TestEngine>(std::move(engine).value()));
  ASSERT_TRUE(s.session);
  OwnedTensor x(Memory::kPageable, Shape{kN});
  std::vector<std::unique_ptr<OwnedTensor>> outs;
  for (int k = 0; k < kOutputs; ++k) outs.push_back(std::make_unique<OwnedTensor>(Memory::kPageable, Shape{kN}));
  ASSERT_TRUE(x.status().ok());
  for (const auto& out : outs) ASSERT_TRUE(out->status().ok());
  int call = 0;
  for (const std::int64_t n : {kN / 4, kN, kN / 4, kN}) {
    std::vector<float> xv = fresh_random(n);
    x.write(xv);
    for (const auto& out : outs) out->poison();
    TensorView args[1 + kOutputs] = {view_of(x, Shape{n}), outs[0]->view(), outs[1]->view(), outs[2]->view()};
    {
      CudaStreamGuard guard(stream_);
      TRTET_ASSERT_OK(s.session->execute(args, 1 + kOutputs));  // host outputs: written on return
    }
    for (int k = 0; k < kOutputs; ++k) {
      ASSERT_TRUE(scaled_matches(outs[static_cast<std::size_t>(k)]->read(), xv, static_cast<float>(k + 1)))
          << "output " << k << " of call " << call << " (" << kOutputs << " pageable outputs of " << n
          << " floats: " << chunks(n) << " chunks)";
    }
    ++call;
  }
}

}  // namespace
}  // namespace trtet_test
