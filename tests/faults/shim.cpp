// libtrtet_faults.so: the fault-injection seam (faults.h, Note [fallible points]). Each CUDA runtime
// call below is defined here with CUDA's own signature and forwards to libcudart's definition
// (dlvsym(RTLD_NEXT, name, TRTET_CUDART_VERSION_TAG)). The shim has no symbol versions of its own,
// so the dynamic linker lets its unversioned definitions satisfy the versioned references
// (cudaMalloc@libcudart.so.N) of every object loaded after it, the backend library included.
// The state and the helpers every definition uses: shim_state.h; the driver functions handed out
// through cudaGetDriverEntryPointByVersion and thread starts: shim_driver.cpp.
#include "faults/faults.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "faults/shim_state.h"

using namespace trtet_faults_shim;  // NOLINT: the shim's own helpers, in every definition below

extern "C" {

// ---- control ----

int trtet_faults_interposed(void) {
  // The cudaGetDeviceCount a lookup from the start of the process finds must lie in this library
  // (compared by file: inside the shim, &cudaGetDeviceCount is itself looked up globally).
  void* bound = dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
  Dl_info found{};
  Dl_info self{};
  if (bound == nullptr || dladdr(bound, &found) == 0) return 0;
  if (dladdr(reinterpret_cast<void*>(&state), &self) == 0) return 0;
  return found.dli_fbase == self.dli_fbase ? 1 : 0;
}

void trtet_faults_reset(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.armed = 0;
  s.error = 0;
  s.reached = 0;
  s.fired = false;
  s.fired_name.clear();
  s.names.clear();
  s.calls.clear();
  s.total_calls = 0;
}

void trtet_faults_set_kinds(unsigned kinds) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.kinds = kinds;
}

unsigned trtet_faults_kinds(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.kinds;
}

void trtet_faults_arm(unsigned long nth, int error) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.armed = nth;
  s.error = error;
  s.reached = 0;
  s.fired = false;
  s.fired_name.clear();
  s.names.clear();
}

void trtet_faults_disarm(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.armed = 0;
  s.error = 0;
}

unsigned long trtet_faults_reached(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.reached;
}

int trtet_faults_fired(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.fired ? 1 : 0;
}

const char* trtet_faults_fired_name(void) {
  thread_local std::string copy;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  copy = s.fired_name;
  return copy.c_str();
}

size_t trtet_faults_names(char* out, size_t capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (out != nullptr && capacity > 0) {
    const std::size_t n = std::min(capacity - 1, s.names.size());
    std::memcpy(out, s.names.data(), n);
    out[n] = '\0';
  }
  return s.names.size();
}

unsigned long trtet_faults_calls(const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (name == nullptr) return s.total_calls;
  auto it = s.calls.find(name);
  return it == s.calls.end() ? 0 : it->second;
}

int trtet_faults_point(const char* name, unsigned kind) { return point(name, kind) ? 1 : 0; }

void trtet_faults_pause(int pause) {
  if (pause != 0) {
    ++t_inside;
  } else if (t_inside > 0) {
    --t_inside;
  }
}

long long trtet_faults_live_bytes(int pinned) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return pinned != 0 ? s.pinned_bytes : s.device_bytes;
}

// ---- last error: an injected failure is reported as CUDA's own would be ----

cudaError_t CUDARTAPI cudaGetLastError(void) {
  TRTET_REAL(cudaGetLastError);
  // The injected error is the most recent one; reading it also clears the runtime's own.
  const cudaError_t own = real();
  const cudaError_t pending = t_pending;
  t_pending = cudaSuccess;
  return pending != cudaSuccess ? pending : own;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  TRTET_REAL(cudaPeekAtLastError);
  const cudaError_t own = real();
  return t_pending != cudaSuccess ? t_pending : own;
}

// ---- pass-through, counted (the binding check) ----

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  TRTET_REAL(cudaGetDeviceCount);
  count_call("cudaGetDeviceCount");
  return real(count);
}

// ---- device allocations ----

cudaError_t CUDARTAPI cudaMalloc(void** ptr, size_t size) {
  TRTET_REAL(cudaMalloc);
  if (point("cudaMalloc", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size);
  if (error == cudaSuccess && ptr != nullptr) track(false, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  TRTET_REAL(cudaMallocAsync);
  if (point("cudaMallocAsync", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size, stream);
  if (error == cudaSuccess && ptr != nullptr) track(false, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  TRTET_REAL(cudaMallocFromPoolAsync);
  if (point("cudaMallocFromPoolAsync", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size, pool, stream);
  // A pool may be of pinned host memory; both are counted as device-side stream-ordered memory.
  if (error == cudaSuccess && ptr != nullptr) track(false, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  TRTET_REAL(cudaMallocManaged);
  if (point("cudaMallocManaged", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size, flags);
  if (error == cudaSuccess && ptr != nullptr) track(false, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  TRTET_REAL(cudaMallocPitch);
  if (point("cudaMallocPitch", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, pitch, width, height);
  if (error == cudaSuccess && ptr != nullptr && pitch != nullptr) track(false, *ptr, *pitch * height);
  return error;
}

cudaError_t CUDARTAPI cudaFree(void* ptr) {
  TRTET_REAL(cudaFree);
  count_call("cudaFree");
  const cudaError_t error = real(ptr);
  if (error == cudaSuccess) untrack(false, ptr);
  return error;
}

cudaError_t CUDARTAPI cudaFreeAsync(void* ptr, cudaStream_t stream) {
  TRTET_REAL(cudaFreeAsync);
  count_call("cudaFreeAsync");
  const cudaError_t error = real(ptr, stream);
  if (error == cudaSuccess) untrack(false, ptr);
  return error;
}

cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* pool, const struct cudaMemPoolProps* props) {
  TRTET_REAL(cudaMemPoolCreate);
  if (point("cudaMemPoolCreate", TRTET_FAULT_DEVICE_ALLOC)) {
    TRTET_NULL_OUT(pool);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(pool, props);
}

cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void* value) {
  TRTET_REAL(cudaMemPoolSetAttribute);
  TRTET_FAULT(cudaMemPoolSetAttribute, TRTET_FAULT_DEVICE_ALLOC, cudaErrorInvalidValue);
  return real(pool, attr, value);
}

cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc* map, size_t count) {
  TRTET_REAL(cudaMemPoolSetAccess);
  TRTET_FAULT(cudaMemPoolSetAccess, TRTET_FAULT_DEVICE_ALLOC, cudaErrorMemoryAllocation);
  return real(pool, map, count);
}

// ---- pinned host allocations ----

cudaError_t CUDARTAPI cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  TRTET_REAL(cudaHostAlloc);
  if (point("cudaHostAlloc", TRTET_FAULT_PINNED_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size, flags);
  if (error == cudaSuccess && ptr != nullptr) track(true, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
  TRTET_REAL(cudaMallocHost);
  if (point("cudaMallocHost", TRTET_FAULT_PINNED_ALLOC)) {
    TRTET_NULL_OUT(ptr);
    return inject(cudaErrorMemoryAllocation);
  }
  const cudaError_t error = real(ptr, size);
  if (error == cudaSuccess && ptr != nullptr) track(true, *ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  TRTET_REAL(cudaHostRegister);
  TRTET_FAULT(cudaHostRegister, TRTET_FAULT_PINNED_ALLOC, cudaErrorMemoryAllocation);
  const cudaError_t error = real(ptr, size, flags);
  if (error == cudaSuccess) track(true, ptr, size);
  return error;
}

cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
  TRTET_REAL(cudaHostUnregister);
  count_call("cudaHostUnregister");
  const cudaError_t error = real(ptr);
  if (error == cudaSuccess) untrack(true, ptr);
  return error;
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  TRTET_REAL(cudaFreeHost);
  count_call("cudaFreeHost");
  const cudaError_t error = real(ptr);
  if (error == cudaSuccess) untrack(true, ptr);
  return error;
}

// ---- events, streams, user objects ----

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* event) {
  TRTET_REAL(cudaEventCreate);
  if (point("cudaEventCreate", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(event);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(event);
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  TRTET_REAL(cudaEventCreateWithFlags);
  if (point("cudaEventCreateWithFlags", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(event);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(event, flags);
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* stream) {
  TRTET_REAL(cudaStreamCreate);
  if (point("cudaStreamCreate", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(stream);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(stream);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  TRTET_REAL(cudaStreamCreateWithFlags);
  if (point("cudaStreamCreateWithFlags", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(stream);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(stream, flags);
}

cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  TRTET_REAL(cudaStreamCreateWithPriority);
  if (point("cudaStreamCreateWithPriority", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(stream);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(stream, flags, priority);
}

cudaError_t CUDARTAPI cudaUserObjectCreate(cudaUserObject_t* object, void* ptr, cudaHostFn_t destroy,
                                           unsigned int initial_refcount, unsigned int flags) {
  TRTET_REAL(cudaUserObjectCreate);
  if (point("cudaUserObjectCreate", TRTET_FAULT_CREATE)) {
    TRTET_NULL_OUT(object);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(object, ptr, destroy, initial_refcount, flags);
}

cudaError_t CUDARTAPI cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                                unsigned int flags) {
  TRTET_REAL(cudaGraphRetainUserObject);
  TRTET_FAULT(cudaGraphRetainUserObject, TRTET_FAULT_CREATE, cudaErrorMemoryAllocation);
  return real(graph, object, count, flags);
}

// ---- graphs and capture ----

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  TRTET_REAL(cudaGraphInstantiate);
  if (point("cudaGraphInstantiate", TRTET_FAULT_GRAPH)) {
    TRTET_NULL_OUT(exec);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(exec, graph, flags);
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  TRTET_REAL(cudaGraphInstantiateWithFlags);
  if (point("cudaGraphInstantiateWithFlags", TRTET_FAULT_GRAPH)) {
    TRTET_NULL_OUT(exec);
    return inject(cudaErrorMemoryAllocation);
  }
  return real(exec, graph, flags);
}

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  TRTET_REAL(cudaStreamBeginCapture);
  TRTET_FAULT(cudaStreamBeginCapture, TRTET_FAULT_GRAPH, cudaErrorMemoryAllocation);
  return real(stream, mode);
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  TRTET_REAL(cudaStreamEndCapture);
  static const auto destroy = next_cuda(&::cudaGraphDestroy, "cudaGraphDestroy");
  const bool fail = point("cudaStreamEndCapture", TRTET_FAULT_GRAPH);
  const cudaError_t error = real(stream, graph);
  if (!fail) return error;
  // The capture ends either way (the stream must not stay captured); its graph is not handed out.
  if (error == cudaSuccess && graph != nullptr && *graph != nullptr) (void)destroy(*graph);
  TRTET_NULL_OUT(graph);
  return inject(cudaErrorStreamCaptureInvalidated);
}

cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  TRTET_REAL(cudaGraphExecUpdate);
  if (TRTET_PLANTED(cudaGraphExecUpdate) == Plant::kDestroyFresh) {
    static const auto instantiate = next_cuda(&::cudaGraphInstantiate, "cudaGraphInstantiate");
    static const auto destroy = next_cuda(&::cudaGraphExecDestroy, "cudaGraphExecDestroy");
    cudaGraphExec_t fresh = nullptr;
    if (instantiate(&fresh, graph, 0) == cudaSuccess) (void)destroy(fresh);
  }
  if (point("cudaGraphExecUpdate", TRTET_FAULT_GRAPH)) {
    if (info != nullptr) {
      std::memset(info, 0, sizeof(*info));
      info->result = cudaGraphExecUpdateError;
    }
    return inject(cudaErrorGraphExecUpdateFailure);
  }
  return real(exec, graph, info);
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  TRTET_REAL(cudaGraphLaunch);
  TRTET_FAULT(cudaGraphLaunch, TRTET_FAULT_GRAPH, cudaErrorMemoryAllocation);
  return real(exec, stream);
}

// ---- copies ----

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  TRTET_REAL(cudaMemcpy);
  TRTET_FAULT(cudaMemcpy, TRTET_FAULT_COPY, cudaErrorInvalidValue);
  return real(dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  TRTET_REAL(cudaMemcpyAsync);
  TRTET_FAULT(cudaMemcpyAsync, TRTET_FAULT_COPY, cudaErrorInvalidValue);
  return real(dst, src, count, kind, stream);
}

cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  TRTET_REAL(cudaMemcpy2DAsync);
  TRTET_FAULT(cudaMemcpy2DAsync, TRTET_FAULT_COPY, cudaErrorInvalidValue);
  return real(dst, dpitch, src, spitch, width, height, kind, stream);
}

cudaError_t CUDARTAPI cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  TRTET_REAL(cudaMemsetAsync);
  TRTET_FAULT(cudaMemsetAsync, TRTET_FAULT_COPY, cudaErrorInvalidValue);
  return real(ptr, value, count, stream);
}

// ---- ordering (kind ORDER, off by default) ----

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  TRTET_REAL(cudaEventRecord);
  if (TRTET_PLANTED(cudaEventRecord) == Plant::kDrop) return cudaSuccess;
  TRTET_FAULT(cudaEventRecord, TRTET_FAULT_ORDER, cudaErrorInvalidValue);
  return real(event, stream);
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  TRTET_REAL(cudaEventRecordWithFlags);
  if (TRTET_PLANTED(cudaEventRecordWithFlags) == Plant::kSyncFirst) {
    static const auto synchronize = next_cuda(&::cudaStreamSynchronize, "cudaStreamSynchronize");
    (void)synchronize(stream);
  }
  TRTET_FAULT(cudaEventRecordWithFlags, TRTET_FAULT_ORDER, cudaErrorInvalidValue);
  return real(event, stream, flags);
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  TRTET_REAL(cudaStreamWaitEvent);
  if (TRTET_PLANTED(cudaStreamWaitEvent) == Plant::kDrop) return cudaSuccess;
  TRTET_FAULT(cudaStreamWaitEvent, TRTET_FAULT_ORDER, cudaErrorInvalidValue);
  return real(stream, event, flags);
}

// Not a fallible point: interposed for the planted bugs only (Note [planted bugs]).
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
  TRTET_REAL(cudaEventSynchronize);
  if (TRTET_PLANTED(cudaEventSynchronize) == Plant::kDrop) return cudaSuccess;
  count_call("cudaEventSynchronize");
  return real(event);
}

}  // extern "C"
