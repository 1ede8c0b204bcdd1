// Public entry point of the TensorRT delegate for ExecuTorch.
//
// Note [Execute contract]
// A delegate call runs on the caller stream of its thread (CudaStreamGuard), else on
// cudaStreamPerThread:
//  - no guard: runs on cudaStreamPerThread and returns when outputs are ready;
//  - guard, all inputs and outputs on the device: enqueues on the stream and returns at once;
//    synchronize the stream before reading outputs;
//  - guard, some I/O in host memory: stages it through pinned buffers on the stream and returns
//    once host outputs are written and host inputs are no longer read;
//  - guard on a stream being captured: records into the capture without synchronizing or
//    allocating; pageable host I/O is then rejected with an error and the capture stays valid.
// The stream must belong to the engine's device; this is checked before any work.
#pragma once

#include <torch_tensorrt/executorch/CudaStreamGuard.h>
