// Small copies between device memory and page-locked staging by a copy kernel on the call's stream
// instead of the copy engines (Note [small copies] in small_copy.cu). chunked_copy.cpp moves each
// small chunk through it; which sizes qualify is layout.h's copy_by_kernel(). Internal to the
// staging layer: sessions and the boundary transfers call prepare_small_copies() (chunked_copy.h)
// as they load, which loads the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"

namespace torch_tensorrt::executorch_backend::staging {

/// How small chunks move: TRTET_SMALL_COPIES (docs/OPTIONS.md), read once by the process.
enum class SmallCopies { kKernel, kEngines };

/// The setting `value` names (null: unset): "kernel" or "engines", in any case; unset is kKernel,
/// and so is anything else, with `*bad` set (the caller warns about it).
SmallCopies parse_small_copies(const char* value, bool* bad) noexcept;

/// True where small chunks on the current device go through the copy kernel: TRTET_SMALL_COPIES is
/// not "engines", the device maps page-locked host memory into its address space at the host's
/// addresses (unified addressing), and this library carries the kernel's code for it. Asked of the
/// driver once per device, then remembered. The first ask loads the kernel (cudaFuncGetAttributes),
/// so a copy's first launch does not: call it at load time, where waiting for the device is allowed.
bool kernel_copies_on_current_device() noexcept;

/// Queues a copy of `bytes` from `from` to `to` on `stream` as a kernel: one of them device memory of
/// the stream's device, the other page-locked host memory mapped into it (the staging's; cudaHostAlloc,
/// the staging pools and arenas all are). Any size and alignment; at most 64 blocks.
Status kernel_copy(void* to, const void* from, std::size_t bytes, cudaStream_t stream);

}  // namespace torch_tensorrt::executorch_backend::staging
