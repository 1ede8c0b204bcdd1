// initcheck_green_probe: one trivial kernel launch on a green-context stream, in raw CUDA, with no
// code of the project in its path. scripts/gpu sanitize runs it under compute-sanitizer's
// initcheck (both modes) and memcheck (green mode) before the GPU suite and prints how each run
// ended: the evidence for skipping green-context tests under initcheck.
//
//   initcheck_green_probe            a 16-SM green context of device 0, a stream on it, the launch
//   initcheck_green_probe --primary  the same launch on an ordinary stream of the primary context
//   initcheck_green_probe --async    on the green-context stream, what the SM probe of src/green
//                                    does, in raw CUDA: a buffer from cudaMallocAsync on the stream,
//                                    cudaMemsetAsync, one block per SM writing the SM's id, the
//                                    buffer copied back and freed on the stream
//   initcheck_green_probe --async --primary   the same on an ordinary stream
//
// Either way: a device int, cudaMemset to 0, a kernel adds 42 to it, the stream is synchronized and
// the value read back. Prints "initcheck-green-probe: ok (...)" and exits 0 when it is 42; prints
// "initcheck-green-probe: FAILED: ..." and exits 1 on any error. Not a gtest and not a ctest test.
// Like every binary of the project it does not link libcuda: the driver functions come through
// cudaGetDriverEntryPointByVersion.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr unsigned kGreenSms = 16;

__global__ void add_42(int* value) { *value += 42; }  // reads the memset value, writes the sum

constexpr unsigned kMaxSmId = 1024;

__global__ void mark_sm(int* seen) {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) seen[sm < kMaxSmId ? sm : kMaxSmId] = 1;
}

int fail(const char* what, const char* why) {
  std::printf("initcheck-green-probe: FAILED: %s: %s\n", what, why);
  return 1;
}

int fail_runtime(const char* what, cudaError_t error) { return fail(what, cudaGetErrorString(error)); }

struct Driver {
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetDevResource_v12040 cuDeviceGetDevResource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 cuDevSmResourceSplitByCount = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 cuDevResourceGenerateDesc = nullptr;
  PFN_cuGreenCtxCreate_v12040 cuGreenCtxCreate = nullptr;
  PFN_cuGreenCtxGetDevResource_v12040 cuGreenCtxGetDevResource = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 cuGreenCtxStreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
  PFN_cuGreenCtxDestroy_v12040 cuGreenCtxDestroy = nullptr;
};

// One driver function at the ABI version its PFN typedef names; false (printed) where it is missing.
template <typename Fn>
bool load(Fn& slot, const char* symbol, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found);
  if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::printf("initcheck-green-probe: FAILED: the driver has no %s at ABI version %u (%s, query result %d)\n", symbol,
                version, cudaGetErrorString(error), static_cast<int>(found));
    return false;
  }
  slot = reinterpret_cast<Fn>(fn);
  return true;
}

bool load_all(Driver& d) {
  return load(d.cuGetErrorString, "cuGetErrorString", 6000) && load(d.cuDeviceGet, "cuDeviceGet", 2000) &&
         load(d.cuDeviceGetDevResource, "cuDeviceGetDevResource", 12040) &&
         load(d.cuDevSmResourceSplitByCount, "cuDevSmResourceSplitByCount", 12040) &&
         load(d.cuDevResourceGenerateDesc, "cuDevResourceGenerateDesc", 12040) &&
         load(d.cuGreenCtxCreate, "cuGreenCtxCreate", 12040) &&
         load(d.cuGreenCtxGetDevResource, "cuGreenCtxGetDevResource", 12040) &&
         load(d.cuGreenCtxStreamCreate, "cuGreenCtxStreamCreate", 12050) &&
         load(d.cuStreamDestroy, "cuStreamDestroy", 4000) && load(d.cuGreenCtxDestroy, "cuGreenCtxDestroy", 12040);
}

const char* driver_text(const Driver& d, CUresult result) {
  const char* text = nullptr;
  if (d.cuGetErrorString == nullptr || d.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) {
    return "unknown CUDA driver error";
  }
  return text;
}

// The launch and the check on `stream`: `value` was set to 0 (and the set is complete) before.
int launch_and_check(int* value, cudaStream_t stream) {
  add_42<<<1, 1, 0, stream>>>(value);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail_runtime("launching the kernel", e);
  if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return fail_runtime("cudaStreamSynchronize after the kernel", e);
  }
  int host = -1;
  if (const cudaError_t e = cudaMemcpy(&host, value, sizeof(host), cudaMemcpyDeviceToHost); e != cudaSuccess) {
    return fail_runtime("cudaMemcpy of the result", e);
  }
  if (host != 42) {
    std::printf("initcheck-green-probe: FAILED: the kernel's result is %d, expected 42\n", host);
    return 1;
  }
  return 0;
}

// A runtime error printed, then -1 (for the functions that return a count).
int count_failed(const char* what, cudaError_t error) {
  fail_runtime(what, error);
  return -1;
}

// Stream-ordered: allocate, set, mark the SMs the blocks ran on, copy back, free, all on `stream`;
// the count of SMs seen, or -1 (printed) on an error.
int sms_seen_stream_ordered(cudaStream_t stream) {
  int sm_count = 0;
  if (cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return -1;
  const std::size_t bytes = (kMaxSmId + 1) * sizeof(int);
  void* seen = nullptr;
  if (const cudaError_t e = cudaMallocAsync(&seen, bytes, stream); e != cudaSuccess) {
    return count_failed("cudaMallocAsync", e);
  }
  if (const cudaError_t e = cudaMemsetAsync(seen, 0, bytes, stream); e != cudaSuccess) {
    return count_failed("cudaMemsetAsync", e);
  }
  mark_sm<<<sm_count, 32, 0, stream>>>(static_cast<int*>(seen));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return count_failed("launching mark_sm", e);
  int host[kMaxSmId + 1] = {};
  if (const cudaError_t e = cudaMemcpyAsync(host, seen, bytes, cudaMemcpyDeviceToHost, stream); e != cudaSuccess) {
    return count_failed("cudaMemcpyAsync", e);
  }
  if (const cudaError_t e = cudaFreeAsync(seen, stream); e != cudaSuccess) return count_failed("cudaFreeAsync", e);
  if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return count_failed("cudaStreamSynchronize after the SM marks", e);
  }
  int count = 0;
  for (unsigned id = 0; id < kMaxSmId; ++id) count += host[id] != 0 ? 1 : 0;
  return count;
}

// The launch (or with `stream_ordered`, the SM marks) on `stream`; 0 when right.
int work_on(int* value, cudaStream_t stream, bool stream_ordered, const char* where) {
  if (!stream_ordered) return launch_and_check(value, stream);
  const int sms = sms_seen_stream_ordered(stream);
  if (sms <= 0) return sms == 0 ? fail("the SM marks", "no SM marked") : 1;
  std::printf("initcheck-green-probe: stream-ordered buffer, blocks ran on %d SMs (%s)\n", sms, where);
  return 0;
}

int run_primary(int* value, bool stream_ordered) {
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return fail_runtime("cudaStreamCreateWithFlags", e);
  }
  const int failed = work_on(value, stream, stream_ordered, "primary context");
  if (const cudaError_t e = cudaStreamDestroy(stream); e != cudaSuccess && failed == 0) {
    return fail_runtime("cudaStreamDestroy", e);
  }
  if (failed == 0) std::printf("initcheck-green-probe: ok (primary context, an ordinary non-blocking stream)\n");
  return failed;
}

int run_green(int* value, bool stream_ordered) {
  Driver d;
  if (!load_all(d)) return 1;
#define PROBE_CU(call)                                         \
  do {                                                         \
    const CUresult probe_result_ = (call);                     \
    if (probe_result_ != CUDA_SUCCESS) {                       \
      return fail(#call, driver_text(d, probe_result_));       \
    }                                                          \
  } while (0)
  CUdevice device = 0;
  PROBE_CU(d.cuDeviceGet(&device, 0));
  CUdevResource sms{};
  PROBE_CU(d.cuDeviceGetDevResource(device, &sms, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResource group{};
  CUdevResource rest{};
  unsigned groups = 1;
  PROBE_CU(d.cuDevSmResourceSplitByCount(&group, &groups, &sms, &rest, 0, kGreenSms));
  if (groups != 1) return fail("cuDevSmResourceSplitByCount", "made no 16-SM group");
  CUdevResourceDesc desc = nullptr;
  PROBE_CU(d.cuDevResourceGenerateDesc(&desc, &group, 1));
  CUgreenCtx green = nullptr;
  PROBE_CU(d.cuGreenCtxCreate(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM));
  CUdevResource granted{};
  PROBE_CU(d.cuGreenCtxGetDevResource(green, &granted, CU_DEV_RESOURCE_TYPE_SM));
  CUstream stream = nullptr;
  PROBE_CU(d.cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
  const int failed = work_on(value, reinterpret_cast<cudaStream_t>(stream), stream_ordered, "green context");
  PROBE_CU(d.cuStreamDestroy(stream));
  PROBE_CU(d.cuGreenCtxDestroy(green));
#undef PROBE_CU
  if (failed == 0) {
    std::printf("initcheck-green-probe: ok (a green context of %u SMs of %u, a stream on it)\n", granted.sm.smCount,
                sms.sm.smCount);
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  bool primary = false;
  bool stream_ordered = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--primary") == 0) {
      primary = true;
    } else if (std::strcmp(argv[i], "--async") == 0) {
      stream_ordered = true;
    } else {
      std::printf("usage: initcheck_green_probe [--primary] [--async]\n");
      return 2;
    }
  }
  // The primary context first (as the project's green layer does), then the buffer set to 0 and
  // the set complete: a green-context stream does not wait for the legacy stream.
  if (const cudaError_t e = cudaInitDevice(0, 0, 0); e != cudaSuccess) return fail_runtime("cudaInitDevice(0)", e);
  if (const cudaError_t e = cudaSetDevice(0); e != cudaSuccess) return fail_runtime("cudaSetDevice(0)", e);
  int* value = nullptr;
  if (const cudaError_t e = cudaMalloc(&value, sizeof(int)); e != cudaSuccess) return fail_runtime("cudaMalloc", e);
  if (const cudaError_t e = cudaMemset(value, 0, sizeof(int)); e != cudaSuccess) return fail_runtime("cudaMemset", e);
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return fail_runtime("cudaDeviceSynchronize", e);
  const int failed = primary ? run_primary(value, stream_ordered) : run_green(value, stream_ordered);
  if (const cudaError_t e = cudaFree(value); e != cudaSuccess && failed == 0) return fail_runtime("cudaFree", e);
  return failed;
}
