// The seam (faults.h) on any machine: the shim is the definition this process and the backend
// library bind to, its points count and fail as armed, an injected error is CUDA's last error,
// the other seams (the copy pool's worker start, the test engines' hook) fail through it, and a
// planted bug changes the calls of one function only.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error_match.h"
#include "cuda/device.h"
#include "staging/host_copy_pool.h"
#include "engines/fault_hook.h"
#include "engines/test_engine_factory.h"
#include "faults/faults.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;

class Seam : public ::testing::Test {
 protected:
  void SetUp() override {
    trtet_faults_reset();
    trtet_faults_set_kinds(TRTET_FAULT_DEFAULT_KINDS);
  }
  void TearDown() override {
    trtet_faults_set_plant("");
    trtet_faults_reset();
    trtet_faults_set_kinds(TRTET_FAULT_DEFAULT_KINDS);
    trtet_test::set_engine_fault_hook(nullptr);
  }
};

std::string names() {
  std::vector<char> text(4096);
  trtet_faults_names(text.data(), text.size());
  return text.data();
}

TEST_F(Seam, TheProcessBindsTheShimsDefinitions) { EXPECT_EQ(trtet_faults_interposed(), 1); }

// The backend library references cudaGetDeviceCount@libcudart.so.N; the shim's unversioned
// definition must be the one bound (with or without a GPU, the call goes through it).
TEST_F(Seam, TheBackendLibrarysCudaCallsGoThroughTheShim) {
  const unsigned long before = trtet_faults_calls("cudaGetDeviceCount");
  (void)ex::cuda::device_count();
  EXPECT_GT(trtet_faults_calls("cudaGetDeviceCount"), before)
      << "libtorchtrt_executorch_backend's cudaGetDeviceCount did not reach the shim";
}

TEST_F(Seam, TheNthPointFailsOnceWithTheKindsErrorAndIsNamed) {
  trtet_faults_arm(2, 0);
  cudaStream_t stream = nullptr;
  (void)cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);  // point 1: runs (fails without a GPU)
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();
  EXPECT_FALSE(trtet_faults_fired());
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorMemoryAllocation);  // point 2: injected
  EXPECT_EQ(p, nullptr);
  EXPECT_TRUE(trtet_faults_fired());
  EXPECT_STREQ(trtet_faults_fired_name(), "cudaMalloc");
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation) << "the injected error is the thread's last error";
  EXPECT_NE(cudaGetLastError(), cudaErrorMemoryAllocation) << "and is cleared once read";
  EXPECT_EQ(trtet_faults_reached(), 2u);
  EXPECT_EQ(names(), "cudaStreamCreateWithFlags\ncudaMalloc\n");
  // Once: the next allocation is not failed by the seam.
  void* q = nullptr;
  const cudaError_t again = cudaMalloc(&q, 256);
  if (again == cudaSuccess) (void)cudaFree(q);
  (void)cudaGetLastError();
  EXPECT_EQ(trtet_faults_reached(), 3u);
}

TEST_F(Seam, AChosenErrorAndKindsOffPassThrough) {
  trtet_faults_set_kinds(TRTET_FAULT_COPY);
  trtet_faults_arm(1, cudaErrorNotPermitted);
  void* p = nullptr;
  const cudaError_t allocated = cudaMalloc(&p, 256);  // not a point: kind off
  if (allocated == cudaSuccess) (void)cudaFree(p);
  (void)cudaGetLastError();
  EXPECT_EQ(trtet_faults_reached(), 0u);
  char a = 0, b = 1;
  EXPECT_EQ(cudaMemcpy(&a, &b, 1, cudaMemcpyHostToHost), cudaErrorNotPermitted);
  EXPECT_EQ(a, 0) << "an injected copy must not run";
  (void)cudaGetLastError();
}

TEST_F(Seam, PausedCallsAreNoPoints) {
  trtet_faults_arm(1, 0);
  {
    trtet_faults::Quiet quiet;
    void* p = nullptr;
    const cudaError_t error = cudaMalloc(&p, 256);
    if (error == cudaSuccess) (void)cudaFree(p);
    (void)cudaGetLastError();
  }
  EXPECT_FALSE(trtet_faults_fired());
  EXPECT_EQ(trtet_faults_reached(), 0u);
}

// The copy pool's workers start through std::thread, which starts through pthread_create: failing
// the second start leaves one worker, and the pool still copies (the caller copies the rest).
TEST_F(Seam, TheCopyPoolsWorkerStartFailsThroughTheSeam) {
  trtet_faults_set_kinds(TRTET_FAULT_THREAD);
  trtet_faults_arm(2, 0);
  ex::staging::HostCopyPool pool(3);
  EXPECT_EQ(pool.workers(), 1) << "the second worker's pthread_create should have failed";
  EXPECT_TRUE(trtet_faults_fired());
  EXPECT_STREQ(trtet_faults_fired_name(), "pthread_create");
  trtet_faults_set_kinds(TRTET_FAULT_DEFAULT_KINDS);
  std::vector<char> source(1 << 16, 'x');
  std::vector<char> destination(source.size(), 0);
  std::vector<ex::staging::CopyTask> tasks;
  for (std::size_t at = 0; at < source.size(); at += 4096) {
    tasks.push_back(ex::staging::CopyTask{destination.data() + at, source.data() + at, 4096});
  }
  ex::staging::CopyBatch batch(tasks);
  pool.begin(batch, tasks.size());
  pool.finish(batch);
  EXPECT_EQ(destination, source);
}

// The test engines' own fault points: the factory and enqueue.
TEST_F(Seam, TheTestEnginesHookFailsTheFactoryWithANamedError) {
  trtet_test::set_engine_fault_hook(&trtet_faults::engine_hook);
  trtet_faults_arm(1, 0);
  auto engine = trtet_test::make_test_engine("fake min=1x4 max=64x4096", 0);
  TRTET_ASSERT_ERROR(engine, ex::ErrorCode::kMemoryAllocationFailed, "test engine factory: injected fault");
  auto next = trtet_test::make_test_engine("fake min=1x4 max=64x4096", 0);
  EXPECT_TRUE(next.ok()) << next.status().message();
}

/// A call of cudaStreamWaitEvent whose return address lies in this function (the asm keeps the
/// compiler from making it a tail call, which would return to the caller's caller).
__attribute__((noinline)) cudaError_t wait_from_here() {
  const cudaError_t error = cudaStreamWaitEvent(nullptr, nullptr, 0);
  asm volatile("" ::: "memory");
  return error;
}

/// "drop cudaStreamWaitEvent <this executable> <wait_from_here's offset> 40".
std::string plant_over_wait_from_here() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&wait_from_here), &info) == 0 || info.dli_fname == nullptr) return "";
  const auto offset = reinterpret_cast<std::uintptr_t>(&wait_from_here) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  char text[64];
  std::snprintf(text, sizeof(text), " %llx 40", static_cast<unsigned long long>(offset));
  return std::string("drop cudaStreamWaitEvent ") + info.dli_fname + text;
}

// Note [planted bugs] (shim_state.h): a dropped call is not made and returns cudaSuccess, only
// where it is made from the planted function's bytes; a call from elsewhere, and every call once
// the plant is gone, is CUDA's own (here an error: a null event, or no device at all).
TEST_F(Seam, APlantDropsTheCallsOfOneFunctionOnly) {
  const std::string plant = plant_over_wait_from_here();
  ASSERT_FALSE(plant.empty()) << "dladdr found no object for this test";
  ASSERT_NE(wait_from_here(), cudaSuccess) << "with no plant, a wait on a null event must fail";
  (void)cudaGetLastError();
  ASSERT_EQ(trtet_faults_set_plant(plant.c_str()), 0) << plant;
  const unsigned long forwarded = trtet_faults_calls("cudaStreamWaitEvent");
  EXPECT_EQ(wait_from_here(), cudaSuccess) << "the planted call was made: " << plant;
  EXPECT_EQ(trtet_faults_plant_hits(), 1ul);
  EXPECT_EQ(trtet_faults_calls("cudaStreamWaitEvent"), forwarded) << "a dropped call went on to CUDA";
  EXPECT_NE(cudaStreamWaitEvent(nullptr, nullptr, 0), cudaSuccess) << "a call from another function was dropped";
  (void)cudaGetLastError();
  EXPECT_EQ(trtet_faults_plant_hits(), 1ul);
  ASSERT_EQ(trtet_faults_set_plant(""), 0);
  EXPECT_NE(wait_from_here(), cudaSuccess) << "the plant outlived its removal";
  (void)cudaGetLastError();
  EXPECT_EQ(trtet_faults_plant_hits(), 0ul);
}

TEST_F(Seam, AMalformedPlantIsRefusedAndChangesNothing) {
  const std::string plant = plant_over_wait_from_here();
  ASSERT_EQ(trtet_faults_set_plant(plant.c_str()), 0);
  for (const char* bad : {"drop", "drop cudaStreamWaitEvent x", "skip cudaStreamWaitEvent x 10 20",
                          "drop cudaStreamWaitEvent x zz 20", "drop cudaStreamWaitEvent x 10 0"}) {
    EXPECT_EQ(trtet_faults_set_plant(bad), -1) << bad;
  }
  EXPECT_EQ(wait_from_here(), cudaSuccess) << "a refused plant replaced the one before it";
  EXPECT_EQ(trtet_faults_plant_hits(), 1ul);
}

}  // namespace
