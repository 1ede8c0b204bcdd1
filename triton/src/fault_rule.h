// Which CUDA errors end the process's use of the GPU (fault_rule.cpp): the rule the backend's fault
// domain acts on (fault.h). Kept apart from Triton's API so that it is unit-tested on its own.
#pragma once

#include <cuda_runtime_api.h>

namespace trtet_triton {

// Note [the fault domain]
// -----------------------
// A CUDA context is per process, and green-context partitions live inside it. An error CUDA calls
// "sticky" (an illegal address, a kernel that trapped or asserted, an uncorrectable ECC error, ...)
// corrupts that context: every later CUDA call of the process, on any stream, partition or model,
// fails with the same error, and only a new process can use the GPU again (measured on the H200: a
// kernel's illegal access on green context A failed launches on green context B, cudaMemcpy and
// cudaMalloc in the primary context, and making a new green context). So one server process is one
// fault domain: partitions isolate SMs, not faults. When a request's stream reports such an error the
// backend poisons the process (fault.h): the first cause is kept and logged, every later request is
// answered at once with it, and the server is stopped, so that /v2/health/ready and /v2/health/live
// report false and an orchestrator restarts it. Every other error (a refused shape, out of memory, a
// launch that failed before it ran) stays the request's own, and the server serves on.

// True when `error` leaves the process's CUDA context unusable (a sticky error).
bool poisons_process(cudaError_t error) noexcept;

}  // namespace trtet_triton
