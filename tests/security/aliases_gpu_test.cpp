// Aliased outputs on the GPU: an aliased output bound to its input's memory without a size check
// would let an engine write past the input's buffer, so the session binds it only if its bytes fit
// the input's capacity; otherwise the call fails with InvalidArgument and nothing is enqueued.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "session/session.h"
#include "security/alias_engine.h"

namespace trtet_security {
namespace {

using Binding = AliasEngine::Binding;
using ex::Shape;
using ex::engine::Alias;
using ex::engine::AliasKind;

/// cache [1..64] float32 (input 0), out [64] (output 1) written in place into cache: at profile 0's
/// maximum the output fits, so the session loads; a call with a smaller cache must not run.
std::unique_ptr<AliasEngine> fixed_output_engine(AliasEngine** raw) {
  Binding cache;
  cache.name = "cache";
  cache.is_input = true;
  cache.min = Shape{1};
  cache.max = Shape{64};
  Binding out;
  out.name = "out";
  out.output = Shape{64};
  auto engine = std::make_unique<AliasEngine>(std::vector<Binding>{cache, out},
                                              std::vector<Alias>{Alias{1, 0, AliasKind::kUser}});
  *raw = engine.get();
  return engine;
}

class SecurityAliasesGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ASSERT_EQ(cudaMalloc(&buffer_, kBufferBytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(buffer_, 0, kBufferBytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out_, 64 * sizeof(float)), cudaSuccess);
  }
  void TearDown() override {
    if (buffer_ != nullptr) (void)cudaFree(buffer_);
    if (out_ != nullptr) (void)cudaFree(out_);
  }

  /// The cache input: `elements` floats at the start of a zeroed 4 KiB buffer, capacity exactly theirs.
  ex::delegate::TensorView cache_view(std::int64_t elements) const {
    ex::delegate::TensorView view;
    view.data = buffer_;
    view.capacity_bytes = static_cast<std::size_t>(elements) * sizeof(float);
    view.shape = Shape{elements};
    view.hint = ex::delegate::MemoryHint::kDevice;
    return view;
  }

  /// The buffer's bytes from `from` on that are no longer 0.
  int written_past(std::size_t from) const {
    std::vector<std::uint8_t> host(kBufferBytes);
    EXPECT_EQ(cudaMemcpy(host.data(), buffer_, kBufferBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    int written = 0;
    for (std::size_t i = from; i < host.size(); ++i) written += host[i] != 0;
    return written;
  }

  /// The output: [64] float32 of its own memory (out_), re-pointed by the session at the cache.
  ex::delegate::TensorView out_view() {
    ex::delegate::TensorView view;
    view.data = out_;
    view.capacity_bytes = 64 * sizeof(float);
    view.shape = Shape{64};
    view.hint = ex::delegate::MemoryHint::kDevice;
    view.set_data = [](void*, ex::delegate::TensorView& v, void* data) {
      v.data = data;
      return ex::Status::Ok();
    };
    return view;
  }

  static constexpr std::size_t kBufferBytes = 4096;
  void* buffer_ = nullptr;
  void* out_ = nullptr;
};

TEST_F(SecurityAliasesGpu, AnAliasedOutputLargerThanItsInputsCapacityIsRefusedAndNothingRuns) {
  AliasEngine* engine = nullptr;
  ex::delegate::Session session(fixed_output_engine(&engine));
  TRTET_ASSERT_OK(session.initialize());
  std::vector<ex::delegate::TensorView> args = {cache_view(8), out_view()};
  const ex::Status status = session.execute(args.data(), args.size());
  TRTET_EXPECT_ERROR(status, ex::ErrorCode::kInvalidArgument,
                     "takes 256 bytes and is written in place into input 0 (\"cache\"), which holds 32");
  EXPECT_EQ(engine->enqueues, 0) << "the engine ran";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(written_past(0), 0) << "bytes of the cache's buffer were written";
}

TEST_F(SecurityAliasesGpu, AnAliasedOutputThatFitsIsWrittenInPlace) {
  AliasEngine* engine = nullptr;
  ex::delegate::Session session(fixed_output_engine(&engine));
  TRTET_ASSERT_OK(session.initialize());
  std::vector<ex::delegate::TensorView> args = {cache_view(64), out_view()};
  TRTET_ASSERT_OK(session.execute(args.data(), args.size()));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(engine->enqueues, 1);
  EXPECT_EQ(written_past(0), 256) << "the output is the cache's 256 bytes";
  EXPECT_EQ(written_past(256), 0) << "and nothing after them";
}

TEST_F(SecurityAliasesGpu, TheSessionRefusesAnOutputLargerAtProfileZerosMaximum) {
  Binding x;
  x.name = "x";
  x.is_input = true;
  x.min = x.max = Shape{4};
  Binding y;
  y.name = "y";
  y.output = Shape{32};
  ex::delegate::Session session(std::make_unique<AliasEngine>(std::vector<Binding>{x, y},
                                                              std::vector<Alias>{Alias{1, 0, AliasKind::kUser}}));
  const ex::Status status = session.initialize();
  EXPECT_EQ(status.code(), ex::ErrorCode::kInvalidProgram) << status.to_string();
}

}  // namespace
}  // namespace trtet_security
