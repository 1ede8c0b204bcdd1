// The fault-injection seam's control interface (libtrtet_faults.so, tests/faults/shim.cpp): a
// test-only shared library that defines the CUDA runtime calls the load and execute paths make,
// forwards each to libcudart, and can fail the Nth fallible one. Nothing of it is in the installed
// library; a test binary links it ahead of libcudart (trtet_faults_link() in CMakeLists.txt) so that
// every reference to those calls, the backend library's included, binds to the shim first.
//
// Note [fallible points]
// ----------------------
// A fallible point is one call that can fail: an interposed CUDA call of an enabled kind, a driver
// function handed out through cudaGetDriverEntryPointByVersion, pthread_create, or a hook that
// calls trtet_faults_point() (the test engines' factory and enqueue, ExecuTorch's allocators in
// tests/faults/failing_allocator.h). Every point reached after trtet_faults_reset() is counted and
// named, in order, from any thread; trtet_faults_arm(N, error) fails the Nth point reached after
// it (once): the call returns `error` (0: the kind's own, below) without running, and its output
// pointer, where it has one, is set to null. The injected error is also what the calling thread's
// next cudaGetLastError/cudaPeekAtLastError reports, as CUDA's own would be.
//
//   kind                       calls                                                   default error
//   TRTET_FAULT_DEVICE_ALLOC   cudaMalloc, cudaMallocAsync, cudaMallocFromPoolAsync,   cudaErrorMemoryAllocation
//                              cudaMallocManaged, cudaMallocPitch, cudaMemPoolCreate,
//                              cudaMemPoolSetAccess; cudaMemPoolSetAttribute         (cudaErrorInvalidValue)
//   TRTET_FAULT_PINNED_ALLOC   cudaHostAlloc, cudaMallocHost, cudaHostRegister         cudaErrorMemoryAllocation
//   TRTET_FAULT_CREATE         cudaEventCreate, cudaEventCreateWithFlags,              cudaErrorMemoryAllocation
//                              cudaStreamCreate, cudaStreamCreateWithFlags,
//                              cudaStreamCreateWithPriority, cudaUserObjectCreate,
//                              cudaGraphRetainUserObject
//   TRTET_FAULT_GRAPH          cudaGraphInstantiate, cudaGraphInstantiateWithFlags,    cudaErrorMemoryAllocation
//                              cudaStreamBeginCapture, cudaStreamEndCapture (ends the
//                              capture and destroys its graph, so the stream is left
//                              uncaptured: cudaErrorStreamCaptureInvalidated),
//                              cudaGraphExecUpdate, cudaGraphLaunch
//   TRTET_FAULT_COPY           cudaMemcpy, cudaMemcpyAsync, cudaMemsetAsync,           cudaErrorInvalidValue
//                              cudaMemcpy2DAsync
//   TRTET_FAULT_ORDER          cudaEventRecord, cudaEventRecordWithFlags,              cudaErrorInvalidValue
//                              cudaStreamWaitEvent
//   TRTET_FAULT_DRIVER         through cudaGetDriverEntryPointByVersion: cuGreenCtxCreate, CUDA_ERROR_OUT_OF_MEMORY
//                              cuGreenCtxStreamCreate, cuDevResourceGenerateDesc,
//                              cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess
//   TRTET_FAULT_THREAD         pthread_create (std::thread's start)                    EAGAIN
//   TRTET_FAULT_HOOK           trtet_faults_point() callers                            (the caller's)
//
// Kinds not enabled (trtet_faults_set_kinds) pass through uncounted. Every interposed call, the
// pass-through ones too (cudaGetDeviceCount, cudaFree, ...), is counted in trtet_faults_calls(),
// which is how a CPU test sees that the backend library's calls bind to the shim. The shim also
// keeps the bytes live from its allocations (device: cudaMalloc*, freed by cudaFree/cudaFreeAsync;
// pinned: cudaHostAlloc, cudaMallocHost, cudaHostRegister, freed by cudaFreeHost/cudaHostUnregister),
// so a test can see that a faulted run gave back what it took.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TRTET_FAULT_DEVICE_ALLOC = 1u << 0,
  TRTET_FAULT_PINNED_ALLOC = 1u << 1,
  TRTET_FAULT_CREATE = 1u << 2,
  TRTET_FAULT_GRAPH = 1u << 3,
  TRTET_FAULT_COPY = 1u << 4,
  TRTET_FAULT_ORDER = 1u << 5,
  TRTET_FAULT_DRIVER = 1u << 6,
  TRTET_FAULT_THREAD = 1u << 7,
  TRTET_FAULT_HOOK = 1u << 8,
  /// Everything but ORDER and THREAD (the CUDA driver starts threads of its own; see fault_loop_test.cpp).
  TRTET_FAULT_DEFAULT_KINDS = TRTET_FAULT_DEVICE_ALLOC | TRTET_FAULT_PINNED_ALLOC | TRTET_FAULT_CREATE |
                              TRTET_FAULT_GRAPH | TRTET_FAULT_COPY | TRTET_FAULT_DRIVER | TRTET_FAULT_HOOK,
  TRTET_FAULT_ALL_KINDS = 0x1ffu,
};

/// 1: this process's CUDA calls go through the shim (its cudaGetDeviceCount is the one bound).
int trtet_faults_interposed(void);
/// Disarms, forgets the points reached and the calls counted (not the live bytes).
void trtet_faults_reset(void);
/// Which kinds are fallible points (default TRTET_FAULT_DEFAULT_KINDS).
void trtet_faults_set_kinds(unsigned kinds);
unsigned trtet_faults_kinds(void);
/// Fails the `nth` point (1-based) reached from now on with `error` (0: the kind's default).
void trtet_faults_arm(unsigned long nth, int error);
void trtet_faults_disarm(void);
/// Points reached since the last reset or arm.
unsigned long trtet_faults_reached(void);
/// Whether the armed point was reached (and failed); the name of the call that failed ("" if none).
int trtet_faults_fired(void);
const char* trtet_faults_fired_name(void);
/// The names of the points reached since the last reset or arm, '\n'-separated, in order; returns
/// the length of the whole text (which is cut to `capacity - 1` bytes).
size_t trtet_faults_names(char* out, size_t capacity);
/// Interposed calls made since the last reset named `name` (NULL: all of them).
unsigned long trtet_faults_calls(const char* name);
/// A fallible point of kind `kind` named `name`: counts it; 1 when it is the one armed (the caller
/// then fails), 0 otherwise.
int trtet_faults_point(const char* name, unsigned kind);
/// While the calling thread's pause count is above 0, its calls are neither points nor counted (a
/// test's own setup: its input copies, its capture's instantiation). Nests.
void trtet_faults_pause(int pause);
/// Bytes allocated through the shim and not yet freed: device (pinned = 0) or pinned host (pinned = 1).
long long trtet_faults_live_bytes(int pinned);
/// Calls the planted bug applied to so far (Note [planted bugs] in shim_state.h).
unsigned long trtet_faults_plant_hits(void);
/// Replaces the plant (TRTET_FAULTS_PLANT's, at first) with `spec` ("" or NULL: none) and zeroes the
/// count of planted calls; -1, and the plant unchanged, where `spec` is malformed.
int trtet_faults_set_plant(const char* spec);

#ifdef __cplusplus
}

namespace trtet_faults {
/// The calling thread's CUDA calls are no points while this lives (trtet_faults_pause).
struct Quiet {
  Quiet() { trtet_faults_pause(1); }
  ~Quiet() { trtet_faults_pause(0); }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;
};

/// The test engines' hook (tests/engines/fault_hook.h) as a point of kind TRTET_FAULT_HOOK.
inline bool engine_hook(const char* point) { return trtet_faults_point(point, TRTET_FAULT_HOOK) != 0; }
}  // namespace trtet_faults
#endif
