// The engine never receives a default stream, whatever the caller selects, and what the caller
// sees stays the contract (outputs ready on return without a guard; ordered after the caller's
// earlier work and done when its stream is synchronized with one).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"
#include "engines/kernels.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

const char* stream_name(cudaStream_t stream) {
  if (stream == nullptr) return "the NULL (legacy default) stream";
  if (stream == cudaStreamLegacy) return "cudaStreamLegacy";
  if (stream == cudaStreamPerThread) return "cudaStreamPerThread";
  return "a non-default stream";
}

// TensorRT is never handed a default stream (enqueueV3 on the legacy or per-thread default stream
// adds a synchronization of its own): without a guard, and with
// a guard on cudaStreamPerThread, cudaStreamLegacy or the NULL stream, the engine receives another
// stream. Without a guard outputs are ready on return; with a guard the engine's work comes after
// the work the caller queued on that stream before the call (a 50 ms kernel, then one that writes
// the input) and is done when that stream is synchronized.
enum class Selection { kNoGuardHostIo, kNoGuardDeviceIo, kPerThread, kLegacy, kNull };

class DefaultStreamGpu : public StreamGpuTest, public ::testing::WithParamInterface<Selection> {};

TEST_P(DefaultStreamGpu, TheEngineNeverReceivesADefaultStream) {
  const Selection selection = GetParam();
  constexpr std::int64_t kN = 4096;
  if (selection == Selection::kNoGuardHostIo || selection == Selection::kNoGuardDeviceIo) {
    const bool host = selection == Selection::kNoGuardHostIo;
    auto s = make_session("elementwise min=1 max=65536 spin_us=20000");
    ASSERT_TRUE(s.session);
    AxpbyIo io(host ? Memory::kPinned : Memory::kDevice, host ? Memory::kPinned : Memory::kDevice, Shape{kN});
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));  // no guard
    const cudaStream_t received = s.engine->last_stream();
    if (host) {
      EXPECT_TRUE(io.out_matches()) << "outputs not ready on return without a guard";  // a host read, no sync
    } else {
      // Read through a fresh non-blocking stream: no implicit synchronization with any other stream.
      OwnedStream reader;
      ASSERT_TRUE(reader.ok());
      std::vector<float> got(static_cast<std::size_t>(kN));
      ASSERT_EQ(cudaMemcpyAsync(got.data(), io.out->data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost, reader),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(reader), cudaSuccess);
      EXPECT_TRUE(axpby_matches(got, io.xv, io.yv, 2.0f, -0.5f)) << "outputs not ready on return without a guard";
    }
    EXPECT_TRUE(is_stream_object(received)) << "without a guard the engine received " << stream_name(received);
    return;
  }

  const cudaStream_t selected = selection == Selection::kPerThread ? cudaStreamPerThread
                                : selection == Selection::kLegacy  ? cudaStreamLegacy
                                                                   : nullptr;
  auto s = make_session("elementwise min=1 max=65536");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{kN});
  {  // warm-up: module loading, first allocations
    CudaStreamGuard guard(selected);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(selected), cudaSuccess);
  ASSERT_TRUE(io.out_matches());
  io.out->poison();
  OwnedTensor source(Memory::kDevice, Shape{kN});
  const std::vector<float> new_x = fresh_random(kN);
  source.write(new_x);
  // The caller's earlier work on the selected stream: 50 ms, then x = new_x.
  TRTET_ASSERT_OK(launch_spin(50'000'000, 1, selected));
  TRTET_ASSERT_OK(launch_scale(static_cast<const float*>(source.data()), static_cast<float*>(io.x->data()), kN, 1.0f, 0,
                               nullptr, selected));
  {
    CudaStreamGuard guard(selected);
    TRTET_ASSERT_OK(s.session->execute(io.args(), 3));
  }
  const cudaStream_t received = s.engine->last_stream();
  ASSERT_EQ(cudaStreamSynchronize(selected), cudaSuccess);
  EXPECT_TRUE(axpby_matches(io.out->read(), new_x, io.yv, 2.0f, -0.5f))
      << "with a guard on " << stream_name(selected)
      << ", the engine's work was not ordered after the caller's earlier work on that stream, or was not done when "
         "that stream was synchronized";
  EXPECT_TRUE(is_stream_object(received))
      << "with a guard on " << stream_name(selected) << " the engine received " << stream_name(received);
}

INSTANTIATE_TEST_SUITE_P(Selections, DefaultStreamGpu,
                         ::testing::Values(Selection::kNoGuardHostIo, Selection::kNoGuardDeviceIo,
                                           Selection::kPerThread, Selection::kLegacy, Selection::kNull),
                         [](const auto& info) {
                           switch (info.param) {
                             case Selection::kNoGuardHostIo: return std::string("NoGuardPinnedIo");
                             case Selection::kNoGuardDeviceIo: return std::string("NoGuardDeviceIo");
                             case Selection::kPerThread: return std::string("GuardOnPerThreadStream");
                             case Selection::kLegacy: return std::string("GuardOnLegacyStream");
                             case Selection::kNull: return std::string("GuardOnNullStream");
                           }
                           return std::string("Unknown");
                         });
}  // namespace
}  // namespace trtet_test
