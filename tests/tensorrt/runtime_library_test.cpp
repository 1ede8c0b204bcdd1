// tensorrt/runtime_library.h: loading a TensorRT runtime library at run time, over stand-in
// libraries (stub/stub_runtime.cpp, loaded by path): which candidate is taken, every refusal and its
// message, the process-wide cache, unloading, and loading from 8 threads at once. Host-only.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error_match.h"
#include "tensorrt/runtime_library.h"
#include "tensorrt/runtime_search.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

constexpr std::int32_t kHeaders = 110100;  // as if built against TensorRT 11.1 headers

RuntimeSearch search_of(const std::string& spec) {
  Result<RuntimeSearch> search = choose_runtime_search(spec, nullptr, kHeaders / 10000, HostCodePolicy{true, "test"});
  EXPECT_TRUE(search.ok()) << search.status().to_string();
  return search.ok() ? search.value() : RuntimeSearch{};
}

bool loaded_in_process(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

TEST(TensorRTRuntimeLibrary, MissingLibrariesAreNotSupportedAndNamed) {
  const RuntimeSearch search = search_of("/nonexistent/libnvinfer_lean.so.11,libtrtet_no_such_runtime.so");
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search, kHeaders);
  ASSERT_FALSE(library.ok());
  TRTET_EXPECT_ERROR(library, ErrorCode::kNotSupported, "could be loaded", "TensorRT 11.1 headers");
  TRTET_EXPECT_ERROR_SAYS(library,
                          "none of /nonexistent/libnvinfer_lean.so.11 (path), libtrtet_no_such_runtime.so (path) was "
                          "found (search order");
  TRTET_EXPECT_ERROR_SAYS(library, "TRTET_TENSORRT_RUNTIME", "load-time option tensorrt_runtime");
}

TEST(TensorRTRuntimeLibrary, TheDefaultOrderWithHostCodeNamesAllThreeRuntimes) {
  Result<RuntimeSearch> search = choose_runtime_search(std::nullopt, nullptr, 11, HostCodePolicy{true, "test"});
  ASSERT_TRUE(search.ok());
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(*search, kHeaders);
  if (library.ok()) GTEST_SKIP() << "a TensorRT 11 runtime is installed here: " << library.value()->path();
  TRTET_EXPECT_ERROR_SAYS(library, "search order \"full,lean,dispatch\" from default");
  for (const char* name : {"libnvinfer.so.11 (full)", "libnvinfer_lean.so.11 (lean)",
                           "libnvinfer_dispatch.so.11 (dispatch)"}) {
    TRTET_EXPECT_ERROR_SAYS(library, name);
  }
}

TEST(TensorRTRuntimeLibrary, LoadsTheFirstCandidateThatServes) {
  const RuntimeSearch search = search_of(std::string("/nonexistent/libnvinfer.so.11,") + TRTET_STUB_V110400 + "," +
                                         TRTET_STUB_V110100);
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search, kHeaders);
  ASSERT_TRUE(library.ok()) << library.status().to_string();
  EXPECT_EQ(library.value()->version(), 110400);
  EXPECT_EQ(library.value()->version_string(), "11.4.0");
  EXPECT_EQ(library.value()->kind(), RuntimeKind::kPath);
  EXPECT_NE(library.value()->path().find("trtet_stub_runtime_v110400"), std::string::npos) << library.value()->path();
  EXPECT_EQ(library.value()->label(), "TensorRT 11.4.0 (runtime at " + library.value()->path() + ")");
  // The entry point is the library's: it sees the logger pointer and the headers' version.
  int logger = 0;
  EXPECT_EQ(library.value()->create_runtime(&logger, kHeaders), &logger);
}

TEST(TensorRTRuntimeLibrary, ASingleMissingLibraryIsNamed) {
  Result<std::shared_ptr<const RuntimeLibrary>> library =
      load_runtime_library(search_of("/nonexistent/libnvinfer.so.11"), kHeaders);
  ASSERT_FALSE(library.ok());
  TRTET_EXPECT_ERROR(library, ErrorCode::kNotSupported,
                     ": /nonexistent/libnvinfer.so.11 (path) was not found (search order");
}

TEST(TensorRTRuntimeLibrary, OtherFailuresAreListedWithTheMissingOnes) {
  const RuntimeSearch search = search_of(std::string("/nonexistent/libnvinfer.so.11,") + TRTET_STUB_V100000);
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search, kHeaders);
  ASSERT_FALSE(library.ok());
  TRTET_EXPECT_ERROR(library, ErrorCode::kIncompatible, "/nonexistent/libnvinfer.so.11 (path): not found; ");
  TRTET_EXPECT_ERROR_SAYS(library, "is TensorRT 10.0.0, which cannot serve");
}

TEST(TensorRTRuntimeLibrary, RefusesOtherMajorOlderMinorAndNonRuntimes) {
  const RuntimeSearch search = search_of(std::string(TRTET_STUB_V100000) + "," + TRTET_STUB_V110000 + "," +
                                         TRTET_STUB_NO_CREATE);
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search, kHeaders);
  ASSERT_FALSE(library.ok());
  TRTET_EXPECT_ERROR(library, ErrorCode::kIncompatible, "no TensorRT runtime library served",
                     "is TensorRT 10.0.0, which cannot serve TensorRT 11.1 headers",
                     "is TensorRT 11.0.0, which cannot serve TensorRT 11.1 headers (it needs 11.1 or a newer 11.x)",
                     "is no TensorRT runtime (it exports no createInferRuntime_INTERNAL)");
}

TEST(TensorRTRuntimeLibrary, RefusedLibrariesAreClosedAgain) {
  const int before = open_runtime_library_count();
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search_of(TRTET_STUB_V100000), kHeaders);
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(open_runtime_library_count(), before);
  EXPECT_FALSE(loaded_in_process(TRTET_STUB_V100000));
}

TEST(TensorRTRuntimeLibrary, KindOfAPathComesFromTheFileName) {
  // Only the name matters: a stub copied to a lean runtime's name would say "lean". Here: a path kind.
  Result<std::shared_ptr<const RuntimeLibrary>> library = load_runtime_library(search_of(TRTET_STUB_V110100), kHeaders);
  ASSERT_TRUE(library.ok()) << library.status().to_string();
  EXPECT_EQ(library.value()->kind(), RuntimeKind::kPath);
}

TEST(TensorRTRuntimeLibrary, CacheSharesOneLoadWhileHeldAndUnloadsAfter) {
  const RuntimeSearch search = search_of(TRTET_STUB_V110400);
  const int before = open_runtime_library_count();
  ASSERT_FALSE(loaded_in_process(TRTET_STUB_V110400));
  {
    Result<std::shared_ptr<const RuntimeLibrary>> first = acquire_runtime_library(search, kHeaders);
    Result<std::shared_ptr<const RuntimeLibrary>> second = acquire_runtime_library(search, kHeaders);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first.value().get(), second.value().get());
    EXPECT_EQ(open_runtime_library_count(), before + 1);
    EXPECT_TRUE(loaded_in_process(TRTET_STUB_V110400));
  }
  EXPECT_EQ(open_runtime_library_count(), before);
  EXPECT_FALSE(loaded_in_process(TRTET_STUB_V110400));  // the last holder closed it
  // A later session loads it anew.
  Result<std::shared_ptr<const RuntimeLibrary>> again = acquire_runtime_library(search, kHeaders);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value()->version(), 110400);
  EXPECT_TRUE(loaded_in_process(TRTET_STUB_V110400));
}

TEST(TensorRTRuntimeLibrary, EightThreadsAcquireOneLibrary) {
  const RuntimeSearch search = search_of(TRTET_STUB_V110100);
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const RuntimeLibrary>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      Result<std::shared_ptr<const RuntimeLibrary>> library = acquire_runtime_library(search, kHeaders);
      if (library.ok()) {
        got[static_cast<std::size_t>(i)] = library.value();
      } else {
        errors[static_cast<std::size_t>(i)] = library.status().to_string();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_NE(got[static_cast<std::size_t>(i)], nullptr) << errors[static_cast<std::size_t>(i)];
    EXPECT_EQ(got[static_cast<std::size_t>(i)].get(), got[0].get());
  }
}

TEST(TensorRTRuntimeLibrary, VersionStrings) {
  EXPECT_EQ(version_string(110400), "11.4.0");
  EXPECT_EQ(version_string(101603), "10.16.3");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
