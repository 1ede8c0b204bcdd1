// Memory is classified by what it is at the call, not by what was once at its address: pinned
// memory that stops being pinned is staged as pageable (eager calls right) and refused in a
// capture with the contract's clear error, the capture left valid and empty.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/error_match.h"
#include "common/gpu.h"
#include "common/random.h"
#include "common/stream_gpu_test.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

using ex::CudaStreamGuard;

/// A float32 view of memory the test owns directly (no callbacks).
TensorView raw_view(void* data, std::size_t capacity_bytes, const Shape& shape) {
  TensorView view;
  view.data = data;
  view.capacity_bytes = capacity_bytes;
  view.shape = shape;
  view.dtype = ex::DataType::kFloat32;
  return view;
}

using MemoryKindGpu = StreamGpuTest;

// The kind of a pointer comes from the memory there now, not a cache keyed by address alone (which
// would keep "pinned" for memory unregistered since, then record a pageable copy into a capture,
// which breaks it). Here the memory is unregistered, which leaves the same pages
// at the same address, so the test does not depend on an allocator handing an address back.

/// An anonymous mapping of `bytes`, unmapped at scope exit.
class Mapping {
 public:
  explicit Mapping(std::size_t bytes) : bytes_(bytes) {
    void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = mapped == MAP_FAILED ? nullptr : mapped;
  }
  ~Mapping() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_ = nullptr;
};

TEST_F(MemoryKindGpu, PageableMemoryAtAFormerlyPinnedAddressIsTreatedAsPageable) {
  constexpr std::int64_t kN = 1 << 22;  // 16 MiB: a pinned allocation of its own, unmapped when freed
  constexpr std::size_t kBytes = kN * sizeof(float);
  auto s = make_session("elementwise min=1 max=4194304");
  ASSERT_TRUE(s.session);
  OwnedTensor y(Memory::kDevice, Shape{kN}), out(Memory::kDevice, Shape{kN});
  std::vector<float> xv = fresh_random(kN);
  const std::vector<float> yv = fresh_random(kN);
  y.write(yv);
  Mapping memory(kBytes);
  ASSERT_NE(memory.data(), nullptr) << "mmap of " << kBytes << " bytes";
  void* pinned = memory.data();
  ASSERT_EQ(cudaHostRegister(pinned, kBytes, cudaHostRegisterDefault), cudaSuccess);
  std::memcpy(pinned, xv.data(), kBytes);
  {
    TensorView args[3] = {raw_view(pinned, kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(args, 3));  // classifies (and caches) `pinned` as pinned
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ASSERT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the call with the pinned input";
  ASSERT_EQ(cudaHostUnregister(pinned), cudaSuccess);  // the same pages, at the same address, now pageable

  const Mapping& pageable = memory;
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pageable.data()), cudaSuccess);
  ASSERT_EQ(attributes.type, cudaMemoryTypeUnregistered) << "the memory at the old address is not pageable";
  fill_random(xv, fresh_seed());
  std::memcpy(pageable.data(), xv.data(), kBytes);
  out.poison();
  const auto enqueues = s.engine->enqueue_count();

  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  ex::Status captured;
  {
    TensorView args[3] = {raw_view(pageable.data(), kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream_);
    captured = s.session->execute(args, 3);
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  (void)cudaGetLastError();
  ASSERT_EQ(ended, cudaSuccess) << "the call broke the caller's capture (" << cudaGetErrorString(ended)
                                << "): the pageable input was taken for the pinned memory once at its address; "
                                   "execute said: "
                                << captured.to_string();
  TRTET_EXPECT_ERROR(captured, ex::ErrorCode::kInvalidArgument, "pageable");
  EXPECT_EQ(s.engine->enqueue_count(), enqueues) << "the rejected call ran the engine";
  std::size_t nodes = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u) << "a rejected call recorded work into the capture";
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  {
    TensorView args[3] = {raw_view(pageable.data(), kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the eager call with the pageable input";
}

}  // namespace
}  // namespace trtet_test
