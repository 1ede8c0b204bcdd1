// initcheck_green_probe: one trivial kernel launch on a green-context stream, in raw CUDA, with no
// code of the project in its path. scripts/gpu-sanitize runs it under compute-sanitizer's
// initcheck (both modes) and memcheck (green mode) before the GPU suite and prints how each run
// ended: the evidence for skipping green-context tests under initcheck.
//
//   initcheck_green_probe            a 16-SM green context of device 0, a stream on it, the launch
//   initcheck_green_probe --primary  the same launch on an ordinary stream of the primary context
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

int run_primary(int* value) {
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return fail_runtime("cudaStreamCreateWithFlags", e);
  }
  const int failed = launch_and_check(value, stream);
  if (const cudaError_t e = cudaStreamDestroy(stream); e != cudaSuccess && failed == 0) {
    return fail_runtime("cudaStreamDestroy", e);
  }
  if (failed == 0) std::printf("initcheck-green-probe: ok (primary context, an ordinary non-blocking stream)\n");
  return failed;
}

int run_green(int* value) {
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
  const int failed = launch_and_check(value, reinterpret_cast<cudaStream_t>(stream));
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
  if (argc == 2 && std::strcmp(argv[1], "--primary") == 0) {
    primary = true;
  } else if (argc != 1) {
    std::printf("usage: initcheck_green_probe [--primary]\n");
    return 2;
  }
  // The primary context first (as the project's green layer does), then the buffer set to 0 and
  // the set complete: a green-context stream does not wait for the legacy stream.
  if (const cudaError_t e = cudaInitDevice(0, 0, 0); e != cudaSuccess) return fail_runtime("cudaInitDevice(0)", e);
  if (const cudaError_t e = cudaSetDevice(0); e != cudaSuccess) return fail_runtime("cudaSetDevice(0)", e);
  int* value = nullptr;
  if (const cudaError_t e = cudaMalloc(&value, sizeof(int)); e != cudaSuccess) return fail_runtime("cudaMalloc", e);
  if (const cudaError_t e = cudaMemset(value, 0, sizeof(int)); e != cudaSuccess) return fail_runtime("cudaMemset", e);
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return fail_runtime("cudaDeviceSynchronize", e);
  const int failed = primary ? run_primary(value) : run_green(value);
  if (const cudaError_t e = cudaFree(value); e != cudaSuccess && failed == 0) return fail_runtime("cudaFree", e);
  return failed;
}
