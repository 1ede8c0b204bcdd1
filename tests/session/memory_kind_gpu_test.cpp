// Memory is classified by what it is at the call, not by what was once at its address: pinned
// memory that stops being pinned is staged as pageable (eager calls right) and refused in a
// capture with the contract's clear error, the capture left valid and empty. Pinned memory the
// device reads at its own address is known as such, and on a partition's stream a call's small
// host I/O moves by the copy kernel, not behind another stream's copies on the copy engines; on
// any other stream it keeps the copy engines (Note [small copies]).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "common/copy_kernel.h"
#include "common/error_match.h"
#include "common/gpu.h"
#include "common/large_copies.h"
#include "session/memory_kind.h"
#include "staging/small_copy.h"
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

  // Eager, the cached kind would do no harm to the data (a copy from pageable memory on the copy
  // engines), but it is not what is there: the call stages the input through the session's pinned
  // host staging, which the pinned input never needed.
  const std::uint64_t host_staging = s.session->stats().host_reserved_bytes;
  {
    TensorView args[3] = {raw_view(pageable.data(), kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream_);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the eager call with the pageable input";
  EXPECT_GE(s.session->stats().host_reserved_bytes, host_staging + kBytes)
      << "the eager call took the pageable input for the pinned memory once at its address (the kind cache's entry)";
}

TEST_F(MemoryKindGpu, PinnedMemoryIsDeviceMappedWhereTheDeviceReadsAndWritesItAtItsOwnAddress) {
  constexpr std::size_t kBytes = 1 << 16;
  void* allocated = nullptr;
  ASSERT_EQ(cudaHostAlloc(&allocated, kBytes, cudaHostAllocDefault), cudaSuccess);
  auto facts = ex::delegate::pointer_facts(allocated, 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, ex::delegate::MemoryKind::kPinnedHost);
  EXPECT_TRUE(facts->device_mapped) << "cudaHostAlloc's memory under unified addressing";
  EXPECT_EQ(cudaFreeHost(allocated), cudaSuccess);

  Mapping memory(kBytes);
  ASSERT_NE(memory.data(), nullptr);
  ASSERT_EQ(cudaHostRegister(memory.data(), kBytes, cudaHostRegisterDefault), cudaSuccess);
  int same_address = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&same_address, cudaDevAttrCanUseHostPointerForRegisteredMem, 0), cudaSuccess);
  facts = ex::delegate::pointer_facts(memory.data(), 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, ex::delegate::MemoryKind::kPinnedHost);
  EXPECT_EQ(facts->device_mapped, same_address != 0) << "registered memory, the device's attribute " << same_address;
  EXPECT_EQ(cudaHostUnregister(memory.data()), cudaSuccess);

  facts = ex::delegate::pointer_facts(memory.data(), 0);
  TRTET_ASSERT_OK(facts);
  EXPECT_EQ(facts->kind, ex::delegate::MemoryKind::kPageableHost);
  EXPECT_FALSE(facts->device_mapped) << "pageable memory is never read by the device at its address";
  // Registered read-only for the device: a copy kernel would fault writing a small output there.
  int read_only = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, 0), cudaSuccess);
  if (read_only != 0) {
    ASSERT_EQ(cudaHostRegister(memory.data(), kBytes, cudaHostRegisterReadOnly), cudaSuccess);
    facts = ex::delegate::pointer_facts(memory.data(), 0);
    TRTET_ASSERT_OK(facts);
    EXPECT_EQ(facts->kind, ex::delegate::MemoryKind::kPinnedHost);
    EXPECT_FALSE(facts->device_mapped) << "memory the device may only read is not for the copy kernel";
    EXPECT_EQ(cudaHostUnregister(memory.data()), cudaSuccess);
  }
}

TEST_F(MemoryKindGpu, SmallPinnedIoLandsWhileAnotherStreamsLargeCopiesAreInFlight) {
  if (!kernel_copies_here()) GTEST_SKIP() << "small copies take the copy engines on this device";
  constexpr std::int64_t kN = 1024;  // 4 KiB each way, pinned
  GreenPartitions green;  // the call runs on a partition's stream, where small copies take the kernel
  ASSERT_TRUE(green.ok());
  const cudaStream_t stream = green.small;
  auto s = make_session("elementwise min=1 max=4194304");
  ASSERT_TRUE(s.session);
  OwnedTensor x(Memory::kPinned, Shape{kN}), y(Memory::kDevice, Shape{kN}), out(Memory::kPinned, Shape{kN});
  std::vector<float> xv = fresh_random(kN);
  const std::vector<float> yv = fresh_random(kN);
  x.write(xv);
  y.write(yv);
  {
    TensorView args[3] = {x.view(), y.view(), out.view()};
    CudaStreamGuard guard(stream);
    TRTET_ASSERT_OK(s.session->execute(args, 3));  // the kernel loaded, the engine warm
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the first call";

  fill_random(xv, fresh_seed());
  x.write(xv);
  out.poison();
  const std::uint64_t kernel_copies = s.session->stats().kernel_copies;
  LargeCopies large;  // 256 MiB each way on another stream
  ASSERT_TRUE(large.ok());
  ASSERT_TRUE(large.start());
  {
    TensorView args[3] = {x.view(), y.view(), out.view()};
    CudaStreamGuard guard(stream);
    TRTET_EXPECT_OK(s.session->execute(args, 3));
  }
  // The promise, asked the moment the call's work is done: the other stream's copies still run.
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_TRUE(large.running())
      << "the call's 4 KiB of pinned I/O landed only once another stream's 256 MiB copies were done";
  EXPECT_EQ(large.finish(), cudaSuccess);
  EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the call beside the large copies";
  EXPECT_EQ(s.session->stats().kernel_copies - kernel_copies, 2u) << "x in and out back, by the copy kernel";
}

TEST_F(MemoryKindGpu, SmallPageableMemoryAtAFormerlyPinnedAddressIsCopiedNotReadByTheCopyKernel) {
  // The kind cache still says "pinned, device-mapped" for the address; a copy kernel reading it now
  // would make an illegal address (a sticky error). The session asks the driver before a kernel
  // copy, so the call is right and the next one works. On a partition's stream, where small
  // copies take the kernel.
  constexpr std::int64_t kN = 1024;  // 4 KiB: small enough for the copy kernel
  constexpr std::size_t kBytes = kN * sizeof(float);
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  const cudaStream_t stream = green.small;
  auto s = make_session("elementwise min=1 max=4194304");
  ASSERT_TRUE(s.session);
  OwnedTensor y(Memory::kDevice, Shape{kN}), out(Memory::kDevice, Shape{kN});
  std::vector<float> xv = fresh_random(kN);
  const std::vector<float> yv = fresh_random(kN);
  y.write(yv);
  Mapping memory(kBytes);  // a page of its own
  ASSERT_NE(memory.data(), nullptr);
  ASSERT_EQ(cudaHostRegister(memory.data(), kBytes, cudaHostRegisterDefault), cudaSuccess);
  std::memcpy(memory.data(), xv.data(), kBytes);
  for (int call = 0; call < 2; ++call) {  // classified and cached as pinned
    TensorView args[3] = {raw_view(memory.data(), kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream);
    TRTET_ASSERT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the calls with the pinned input";
  if (ex::staging::kernel_copies_on_current_device()) {
    ASSERT_EQ(s.session->stats().kernel_copies, 2u) << "the premise: the pinned input took the copy kernel";
  }
  ASSERT_EQ(cudaHostUnregister(memory.data()), cudaSuccess);  // the same page, now pageable

  fill_random(xv, fresh_seed());
  std::memcpy(memory.data(), xv.data(), kBytes);
  out.poison();
  {
    TensorView args[3] = {raw_view(memory.data(), kBytes, Shape{kN}), y.view(), out.view()};
    CudaStreamGuard guard(stream);
    TRTET_EXPECT_OK(s.session->execute(args, 3));
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << "the call after the unregister faulted";
  EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f)) << "the call with the now pageable input";
}

// Which way a call's small host I/O moves, by the stream: the copy kernel on a partition's stream
// (its SMs are its own), the copy engines on an ordinary stream and without a guard (there the
// kernel would wait for SMs that other work holds). Pinned and pageable I/O alike, the outputs right.
TEST_F(MemoryKindGpu, SmallHostIoTakesTheCopyKernelOnlyOnAPartitionsStream) {
  if (!kernel_copies_here()) GTEST_SKIP() << "small copies take the copy engines on this device";
  constexpr std::int64_t kN = 1024;  // 4 KiB each way
  GreenPartitions green;
  ASSERT_TRUE(green.ok());
  auto s = make_session("elementwise min=1 max=4194304");
  ASSERT_TRUE(s.session);
  // Every tensor lives for the whole test. The session caches a pointer's kind by its address
  // alone (memory_kind.h), and in S64's first run of this test every pageable call counted one copy
  // more on the copy engines: a device `y`, made after the pinned tensors were freed, at an address
  // one of them had had (the one binding the counts leave), staged as cached pinned.
  OwnedTensor y(Memory::kDevice, Shape{kN});
  const std::vector<float> yv = fresh_random(kN);
  y.write(yv);
  OwnedTensor pinned_x(Memory::kPinned, Shape{kN}), pinned_out(Memory::kPinned, Shape{kN});
  OwnedTensor pageable_x(Memory::kPageable, Shape{kN}), pageable_out(Memory::kPageable, Shape{kN});
  for (const Memory memory : {Memory::kPinned, Memory::kPageable}) {
    OwnedTensor& x = memory == Memory::kPinned ? pinned_x : pageable_x;
    OwnedTensor& out = memory == Memory::kPinned ? pinned_out : pageable_out;
    struct Way {
      const char* stream_name;
      cudaStream_t stream;
      bool guarded;
      bool kernel;
    };
    for (const Way& way : {Way{"an ordinary stream", stream_, true, false}, Way{"a partition's stream", green.small, true, true},
                           Way{"no guard", nullptr, false, false}}) {
      SCOPED_TRACE(std::string(to_string(memory)) + " I/O on " + way.stream_name);
      std::vector<float> xv = fresh_random(kN);
      x.write(xv);
      out.poison();
      const ex::delegate::SessionStats before = s.session->stats();
      {
        TensorView args[3] = {x.view(), y.view(), out.view()};
        std::optional<CudaStreamGuard> guard;
        if (way.guarded) guard.emplace(way.stream);
        TRTET_ASSERT_OK(s.session->execute(args, 3));
      }
      if (way.guarded) {
        ASSERT_EQ(cudaStreamSynchronize(way.stream), cudaSuccess);
      }
      const ex::delegate::SessionStats after = s.session->stats();
      EXPECT_EQ(after.kernel_copies - before.kernel_copies, way.kernel ? 2u : 0u);
      EXPECT_EQ(after.engine_copies - before.engine_copies, way.kernel ? 0u : 2u);
      EXPECT_TRUE(axpby_matches(out.read(), xv, yv, 2.0f, -0.5f));
    }
  }
}

}  // namespace
}  // namespace trtet_test
