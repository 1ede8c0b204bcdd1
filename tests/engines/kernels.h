// Host-callable launchers of the test engines' CUDA kernels. Every launcher enqueues on `stream`
// only: no allocation, no synchronization. `sm_flags`, when not null, is an int array of
// kSmFlagCount entries; each block marks flags[%smid] = 1 (an id >= kMaxSmId marks the last entry).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace trtet_test {

using torch_tensorrt::executorch_backend::Status;

/// SM ids are below this on every GPU so far; flags[kMaxSmId] reports a larger one.
constexpr int kMaxSmId = 1024;
constexpr int kSmFlagCount = kMaxSmId + 1;

/// out[i] = a * x[i] + b * y[i]; block 0 then spins for `spin_ns` (globaltimer), so one launch
/// lasts at least that long. Nothing is launched when n == 0 and spin_ns == 0.
Status launch_axpby(const float* x, const float* y, float* out, std::int64_t n, float a, float b,
                    std::int64_t spin_ns, int* sm_flags, cudaStream_t stream);

/// out[i] = a * x[i], then block 0 spins for `spin_ns`.
Status launch_scale(const float* x, float* out, std::int64_t n, float a, std::int64_t spin_ns, int* sm_flags,
                    cudaStream_t stream);

/// out[i] = p[i] + q[i] (in place when out == p), then block 0 spins for `spin_ns`.
Status launch_add(const float* p, const float* q, float* out, std::int64_t n, std::int64_t spin_ns, int* sm_flags,
                  cudaStream_t stream);

/// out[0] = sum of x[0..n), by one block in a fixed order (deterministic).
Status launch_sum(const float* x, float* out, std::int64_t n, int* sm_flags, cudaStream_t stream);

/// `blocks` one-warp blocks, each marking its SM and spinning `spin_ns`: with enough blocks every
/// SM the stream may use gets some, so the flags show where the stream's kernels can run.
Status launch_mark_sms(int* sm_flags, int blocks, std::int64_t spin_ns, cudaStream_t stream);

/// One thread: when x[0] == value, writes to an address no allocation has (a few bytes past null),
/// so the kernel faults with cudaErrorIllegalAddress, a sticky error that leaves the context
/// unusable (tests/faults/sticky_error_gpu_test.cpp). Otherwise it does nothing.
Status launch_fault_if(const float* x, float value, cudaStream_t stream);

/// An aggressor: `blocks` blocks of 128 threads that each spin for `spin_ns`.
Status launch_spin(std::int64_t spin_ns, int blocks, cudaStream_t stream);

}  // namespace trtet_test
