#include "staging/small_copy.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "common/environment.h"
#include "common/log.h"
#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::staging {

// Note [small copies]
// -------------------
// A copy-engine transfer of a few KiB costs its latency, not its bandwidth, and the copy engines
// belong to the whole GPU: a green context partitions SMs, not copy engines, so a small transfer
// can queue behind another stream's large one. On an H100 (trtet-small-copies, bench/small_copies.cu;
// docs/PERFORMANCE.md, "Small copies"), a call shaped like a small call with pageable host I/O (the
// input into page-locked staging, to the device, a one-block kernel, back, the event waited for)
// was timed alone and beside a thread keeping the copy engines busy with 32 MiB copies each way. For
// 256 B to 64 KiB each way, its p99 went from 26-60 us alone to 620-1,270 us beside; with the copies
// made by a kernel on the call's stream, it was 52-85 us beside (the first of three runs; the
// kernel's p99 beside was 0.06 to 0.09 of the copy engines' in all three). Alone, neither was the
// faster (kernel / copy engines, p50: 0.82 to 1.37 by size and run).
//
// So where the call's stream runs on a green context, a chunk of at most kKernelCopyMaxBytes
// (layout.h) between device memory and the staging's page-locked memory is moved by copy_kernel, on
// that stream, inside its partition, in stream order like the transfer it replaces. So is a
// caller's page-locked tensor of at most that size that the device reads at its own address
// (queue_transfer in chunked_copy.h; the session's pinned I/O, PointerFacts::device_mapped). On any
// other stream the copy engines take every transfer: there the kernel shares the SMs with all other
// work, and behind a neighbour's long kernels it waits for them. In S63's serving runs (H100) the
// whole-GPU layout, its 4 KiB host I/O by the kernel beside a compute-bound aggressor, spent 499 to
// 579 us in the backend's execute against 353 to 432 us with the copy engines in S62's (another
// H100); the partitions' execute was as before. So the rule asks PinnedChunks::small_by_kernel (a
// session's staging on a partition's stream; the boundary's ring likewise) and, for pinned I/O,
// ResolvedStream::on_partition. The session's kind cache asks the driver again for page-locked
// memory on every call (it keys by address alone), so a kernel never reads memory unregistered
// since, which would fault. Memory the device may only read (cudaHostRegisterReadOnly; the
// driver's access flags) keeps the copy engines: the kernel's write of a small output there would
// fault. Larger chunks keep the copy engines: their bandwidth costs the partition no SM time, and
// the bench's 1 MiB row (kernel / copy engines, p50 and p99: 0.45-0.58 beside, 0.95-1.04 alone) is
// not yet a reason to move the chunked path of large tensors. The kernel reads or writes host
// memory across the bus directly: the staging is mapped for the device at the host's addresses
// (cudaHostAlloc's memory under unified addressing, the pools and arenas by their access
// descriptors), host writes made before the launch are seen by it, and its writes are seen by the
// host once the event recorded after it has completed.
//
// Where the device does not map host memory, or this library has no code for the device's
// architecture (built for other GPUs), cudaFuncGetAttributes says so once, and copies go to the
// copy engines as before. That same call loads the kernel, and sessions and the boundary transfers
// make it as they load: CUDA loads a kernel at its first launch otherwise, and that load waits for
// the work running on the device, so a guarded call's first small copy returned only once the
// caller's queued work was done (the H100's first run of BoundaryTransfersGpu.PageableIn... caught
// it). TRTET_SMALL_COPIES=engines sends them there on every device: for a platform where the GPU
// should not read host memory itself (under confidential computing, for one), or to compare the two
// ways in one program.
//
// A failed launch is returned as a failed transfer is, with CUDA's cause. The fault seam
// (tests/faults) interposes the copy calls and not kernel launches, so its loops fail a staging
// copy only where the copy engines take it. A launch after a sticky error fails, and that is tested
// here (staging_small_copies_sticky_gpu_test: the transfer's error names the launch and CUDA's cause).

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 64;
constexpr std::size_t kVector = 16;

__global__ void copy_kernel(unsigned char* to, const unsigned char* from, std::size_t bytes) {
  const std::size_t start = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t done = 0;
  if (((reinterpret_cast<std::uintptr_t>(to) | reinterpret_cast<std::uintptr_t>(from)) & (kVector - 1)) == 0) {
    const std::size_t vectors = bytes / kVector;
    auto* t = reinterpret_cast<uint4*>(to);
    const auto* f = reinterpret_cast<const uint4*>(from);
    for (std::size_t i = start; i < vectors; i += stride) t[i] = f[i];
    done = vectors * kVector;
  }
  for (std::size_t i = done + start; i < bytes; i += stride) to[i] = from[i];
}

/// Per device: 0 not asked yet, 1 kernel copies, 2 copy engines. Devices past the table use the
/// copy engines.
std::array<std::atomic<std::int8_t>, 64> g_device_state{};

/// TRTET_SMALL_COPIES, read and warned about once.
SmallCopies setting() noexcept {
  static const SmallCopies read = [] {
    const char* value = read_environment(kSmallCopiesVariable);
    bool bad = false;
    const SmallCopies parsed = parse_small_copies(value, &bad);
    if (bad) {
      log(LogLevel::kWarning, "%s=\"%.64s\" is neither \"kernel\" nor \"engines\"; small copies use the copy kernel "
          "(docs/OPTIONS.md)", kSmallCopiesVariable, value);
    }
    return parsed;
  }();
  return read;
}

std::int8_t ask(int device) noexcept {
  if (setting() == SmallCopies::kEngines) return 2;
  int unified = 0, maps = 0;
  if (cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&maps, cudaDevAttrCanMapHostMemory, device) != cudaSuccess || unified == 0 || maps == 0) {
    (void)cudaGetLastError();
    return 2;
  }
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, copy_kernel) != cudaSuccess) {  // no code for this device
    (void)cudaGetLastError();
    return 2;
  }
  return 1;
}

}  // namespace

SmallCopies parse_small_copies(const char* value, bool* bad) noexcept {
  if (bad != nullptr) *bad = false;
  if (value == nullptr) return SmallCopies::kKernel;
  if (strcasecmp(value, "engines") == 0) return SmallCopies::kEngines;
  if (strcasecmp(value, "kernel") == 0) return SmallCopies::kKernel;
  if (bad != nullptr) *bad = true;
  return SmallCopies::kKernel;
}

bool kernel_copies_on_current_device() noexcept {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (device < 0 || static_cast<std::size_t>(device) >= g_device_state.size()) return false;
  std::atomic<std::int8_t>& state = g_device_state[static_cast<std::size_t>(device)];
  std::int8_t known = state.load(std::memory_order_acquire);
  if (known == 0) {
    known = ask(device);
    state.store(known, std::memory_order_release);
  }
  return known == 1;
}

Status kernel_copy(void* to, const void* from, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status::Ok();
  const std::size_t per_block = static_cast<std::size_t>(kThreads) * kVector;
  const int blocks = static_cast<int>(std::min<std::size_t>((bytes + per_block - 1) / per_block, kMaxBlocks));
  copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<unsigned char*>(to), static_cast<const unsigned char*>(from),
                                              bytes);
  if (const cudaError_t launched = cudaGetLastError(); launched != cudaSuccess) {
    return cuda::runtime_status(launched, "copy_kernel<<<>>> (a small chunk's transfer, Note [small copies])", __FILE__,
                                __LINE__);
  }
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::staging
