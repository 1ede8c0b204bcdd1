// Shapes and aliasing: zero-size tensors, a 0-d output where the engine reports [1], aliased
// outputs reflected into the output argument, outputs resized through the callback.
#include <gtest/gtest.h>

#include <cstdint>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/gpu.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

class ShapesGpu : public StreamGpuTest {
 protected:
  ex::Status run(Session& session, TensorView* args, std::size_t count) {
    CudaStreamGuard guard(stream_);
    ex::Status status = session.execute(args, count);
    if (status.ok() && cudaStreamSynchronize(stream_) != cudaSuccess) {
      return ex::make_error(ex::ErrorCode::kInternal, "cudaStreamSynchronize failed");
    }
    return status;
  }
};

TEST_F(ShapesGpu, ZeroSizeTensorsBindAValidAddress) {
  auto s = make_session("elementwise min=0x4 max=64x4");
  ASSERT_TRUE(s.session);
  TensorView args[3];
  for (auto& a : args) a.shape = Shape{0, 4};  // data null, capacity 0
  TRTET_ASSERT_OK(run(*s.session, args, 3));
  EXPECT_EQ(s.engine->enqueue_count(), 1u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(s.engine->bound_address(i), nullptr) << i;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s.engine->bound_address(i)) % 256, 0u) << i;
  }
  EXPECT_EQ(args[2].shape, (Shape{0, 4}));
  // And with real (unused) memory behind the views, on the host.
  AxpbyIo io(Memory::kPageable, Memory::kPageable, Shape{0, 4});
  TRTET_ASSERT_OK(run(*s.session, io.args(), 3));
  EXPECT_TRUE(io.out->poison_intact());
}

class ZeroDOutputGpu : public ShapesGpu, public ::testing::WithParamInterface<Memory> {};

TEST_P(ZeroDOutputGpu, ZeroDOutputAcceptedWhereEngineReportsOne) {
  auto s = make_session("sum min=1 max=4096");
  ASSERT_TRUE(s.session);
  OwnedTensor x(Memory::kDevice, Shape{1000});
  OwnedTensor total(GetParam(), Shape{}, 1);  // a 0-d tensor
  const auto xv = random_floats(1000, fresh_seed());
  x.write(xv);
  total.poison();
  TensorView args[2] = {x.view(), total.view()};
  TRTET_ASSERT_OK(run(*s.session, args, 2));
  EXPECT_EQ(args[1].shape.rank, 0) << "a 0-d output was reshaped to " << args[1].shape.to_string();
  EXPECT_EQ(total.resize_calls, 0);
  double expected = 0;
  for (float f : xv) expected += f;
  const auto got = total.read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NEAR(got[0], expected, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Memory, ZeroDOutputGpu, ::testing::Values(Memory::kDevice, Memory::kPageable),
                         [](const auto& info) { return std::string(to_string(info.param)); });

/// The aliasing engines' cache, x and out ([1024], device memory); cache and x hold fresh random
/// values, c and xv.
struct AliasIo {
  AliasIo() {
    cache.write(c);
    x.write(xv);
  }
  OwnedTensor cache{Memory::kDevice, Shape{1024}}, x{Memory::kDevice, Shape{1024}}, out{Memory::kDevice, Shape{1024}};
  const std::vector<float> c = random_floats(1024, fresh_seed()), xv = random_floats(1024, fresh_seed());
};

class AliasGpu : public ShapesGpu, public ::testing::WithParamInterface<const char*> {};

TEST_P(AliasGpu, AliasedOutputIsUpdatedInPlaceAndReflectedIntoTheOutputArgument) {
  auto s = make_session(GetParam());
  ASSERT_TRUE(s.session);
  AliasIo io;
  auto& [cache, x, out, c, xv] = io;
  out.poison();
  TensorView args[3] = {cache.view(), x.view(), out.view()};
  TRTET_ASSERT_OK(run(*s.session, args, 3));
  EXPECT_EQ(args[2].data, cache.data()) << "the output argument does not point at the cache";
  EXPECT_EQ(out.set_data_calls, 1);
  EXPECT_EQ(s.engine->bound_address(2), cache.data());
  const auto updated = cache.read();
  for (std::size_t i = 0; i < updated.size(); ++i) ASSERT_EQ(updated[i], c[i] + xv[i]) << i;
  EXPECT_TRUE(out.poison_intact()) << "the output's own memory was written";
  EXPECT_EQ(out.read(), updated);  // the runtime's tensor now reads the cache

  // Second call: the argument already points at the cache, no re-pointing needed.
  const auto x2 = random_floats(1024, fresh_seed());
  x.write(x2);
  TRTET_ASSERT_OK(run(*s.session, args, 3));
  EXPECT_EQ(out.set_data_calls, 1);
  const auto twice = cache.read();
  for (std::size_t i = 0; i < twice.size(); ++i) ASSERT_EQ(twice[i], updated[i] + x2[i]) << i;
}

TEST_P(AliasGpu, AliasedOutputWithNoDataIsPointedAtTheInput) {
  auto s = make_session(GetParam());
  ASSERT_TRUE(s.session);
  AliasIo io;
  auto& [cache, x, out, c, xv] = io;
  TensorView args[3] = {cache.view(), x.view(), out.view()};
  args[2].data = nullptr;
  args[2].capacity_bytes = 0;
  TRTET_ASSERT_OK(run(*s.session, args, 3));
  EXPECT_EQ(args[2].data, cache.data());
  const auto updated = cache.read();
  for (std::size_t i = 0; i < updated.size(); ++i) ASSERT_EQ(updated[i], c[i] + xv[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(Kinds, AliasGpu, ::testing::Values("aliasing n=1024", "aliasing n=1024 alias=user"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "KvCacheUpdate" : "User");
                         });

class ResizeGpu : public ShapesGpu, public ::testing::WithParamInterface<Memory> {};

TEST_P(ResizeGpu, OutputIsResizedThroughTheCallback) {
  auto s = make_session("elementwise min=1x4 max=64x4096");
  ASSERT_TRUE(s.session);
  AxpbyIo io(GetParam(), GetParam(), Shape{33, 100}, 64 * 4096);
  io.out->poison();
  io.views[2].shape = Shape{1, 4};  // the runtime's tensor has some other shape
  TRTET_ASSERT_OK(run(*s.session, io.args(), 3));
  EXPECT_EQ(io.out->resize_calls, 1);
  EXPECT_EQ(io.views[2].shape, (Shape{33, 100}));
  EXPECT_EQ(io.out->shape(), (Shape{33, 100}));
  EXPECT_TRUE(io.out_matches());
}

TEST_P(ResizeGpu, ResizeMayMoveTheOutput) {
  auto s = make_session("elementwise min=1x4 max=64x4096");
  ASSERT_TRUE(s.session);
  AxpbyIo io(GetParam(), GetParam(), Shape{8, 64}, 4);  // out holds 4 elements
  io.out->grow_on_resize = true;
  io.views = {io.x->view(), io.y->view(), io.out->view()};
  io.views[2].shape = Shape{1, 4};
  TRTET_ASSERT_OK(run(*s.session, io.args(), 3));
  EXPECT_EQ(io.out->resize_calls, 1);
  EXPECT_EQ(io.views[2].data, io.out->data());
  EXPECT_GE(io.views[2].capacity_bytes, 8u * 64u * sizeof(float));
  EXPECT_TRUE(io.out_matches());
}

INSTANTIATE_TEST_SUITE_P(Memory, ResizeGpu, ::testing::Values(Memory::kDevice, Memory::kPinned, Memory::kPageable),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace trtet_test
