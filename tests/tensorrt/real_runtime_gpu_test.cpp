// The adapter against TensorRT's real lean and dispatch runtime libraries (PyPI's
// tensorrt-{lean,dispatch}-cu13-libs, extracted by scripts/install-tensorrt-runtime into
// TRTET_TENSORRT_RUNTIME_DIR): loading and version reporting, runtime creation, every deserialization
// failure with TensorRT's own reason, the severities TensorRT logs, 8 threads at once, loading and
// unloading across sessions, and the missing-library error. No plan can be built here, so nothing
// deserializes successfully: fake_engine_gpu_test.cpp covers what needs a plan.
// Each test skips, with the reason, without the library it needs or (where it needs one) a GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <NvInferRuntime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "blob/format.h"
#include "common/error_match.h"
#include "common/gpu.h"
#include "engine/engine_factory.h"
#include "tensorrt/logger.h"
#include "tensorrt/runtime_library.h"
#include "tensorrt/runtime_search.h"
#include "tensorrt/tensorrt_engine.h"
#include "tensorrt/tensorrt_factory.h"
#include "tensorrt/version.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

using Severity = nvinfer1::ILogger::Severity;

std::string runtime_dir() {
  const char* dir = std::getenv("TRTET_TENSORRT_RUNTIME_DIR");
  return dir != nullptr && *dir != '\0' ? dir : TRTET_TENSORRT_RUNTIME_DIR;
}

std::string library_path(RuntimeKind kind) { return runtime_dir() + "/" + runtime_file_name(kind, NV_TENSORRT_MAJOR); }

bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

/// Skips the test unless `path` exists (the reason names what to run).
#define REQUIRE_LIBRARY(path)                                                                                    \
  do {                                                                                                           \
    if (!readable(path)) {                                                                                       \
      GTEST_SKIP() << "no TensorRT runtime library at " << (path)                                                \
                   << ": run scripts/install-tensorrt-runtime (or set TRTET_TENSORRT_RUNTIME_DIR)";              \
    }                                                                                                            \
  } while (0)

/// An ILogger that keeps every message with its severity.
class RecordingLogger final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, nvinfer1::AsciiChar const* message) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.emplace_back(severity, message != nullptr ? message : "");
  }
  std::vector<std::pair<Severity, std::string>> messages() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<Severity, std::string>> messages_;
};

/// Bytes that are no plan, each for one failure TensorRT must report.
struct NotAPlan {
  const char* what;
  std::vector<std::uint8_t> bytes;
};

std::vector<std::uint8_t> with_header(const char magic[4], std::uint32_t version, std::size_t size) {
  std::vector<std::uint8_t> bytes(size, 0);
  std::memcpy(bytes.data(), magic, 4);
  if (size >= 8) std::memcpy(bytes.data() + 4, &version, sizeof version);
  return bytes;
}

std::vector<NotAPlan> not_plans() {
  const std::string text = "this is not a TensorRT plan, only some text that is long enough to be read as a header";
  return {
      {"text", std::vector<std::uint8_t>(text.begin(), text.end())},
      {"zeros", std::vector<std::uint8_t>(4096, 0)},
      // TensorRT plans begin with the magic "ftrt" (version-compatible ones "ptrt", as the library's
      // strings suggest); what follows is TensorRT's own. These are guesses at a plan's header:
      {"truncated plan header", with_header("ftrt", 0, 4)},
      {"plan header of TensorRT 8.6", with_header("ftrt", 8601, 4096)},
      {"plan header of TensorRT 10.0", with_header("ftrt", 100000, 4096)},
      {"version-compatible plan header of TensorRT 10.0", with_header("ptrt", 100000, 4096)},
  };
}

/// A request for `bytes` from `runtime`; `allow_host_code` is the load-time option
/// allow_engine_host_code (the dispatch runtime runs only with it: Note [Engine host code]).
EngineRequest request_for(const std::vector<std::uint8_t>& bytes, const blob::Metadata& metadata,
                          std::optional<std::string> runtime, std::optional<bool> allow_host_code = true) {
  EngineRequest request;
  request.engine_bytes = bytes.data();
  request.engine_size = bytes.size();
  request.metadata = &metadata;
  request.device = 0;
  request.runtime_library = std::move(runtime);
  request.allow_engine_host_code = allow_host_code;
  return request;
}

/// Sets (or, with null, unsets) an environment variable for a scope, restoring it after.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* previous = std::getenv(name);
    if (previous != nullptr) saved_ = std::string(previous);
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    if (saved_.has_value()) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

/// TensorRT's reason in a deserialization failure: "... could not deserialize the engine (N bytes): <reason>
/// [the full runtime runs ...]"; empty when there is none.
std::string tensorrt_reason(const std::string& message) {
  const std::string start = " bytes): ";
  const std::string hint = " [the full runtime runs";
  const std::size_t at = message.find(start);
  const std::size_t end = message.rfind(hint);
  if (at == std::string::npos || end == std::string::npos || end < at + start.size()) return std::string();
  return message.substr(at + start.size(), end - at - start.size());
}

/// The runtime library at `path` (of these headers' major version), loaded through the adapter's loader.
Result<std::shared_ptr<const RuntimeLibrary>> acquire_library(const std::string& path) {
  TRTET_ASSIGN_OR_RETURN(const RuntimeSearch search,
                         choose_runtime_search(path, nullptr, NV_TENSORRT_MAJOR, HostCodePolicy{true, "test"}));
  return acquire_runtime_library(search, static_cast<std::int32_t>(kHeaderVersion));
}

/// A TensorRT runtime from `library` logging to `logger`; null where TensorRT makes none.
std::unique_ptr<nvinfer1::IRuntime> make_runtime(const RuntimeLibrary& library, nvinfer1::ILogger& logger) {
  return std::unique_ptr<nvinfer1::IRuntime>(static_cast<nvinfer1::IRuntime*>(
      library.create_runtime(static_cast<nvinfer1::ILogger*>(&logger), static_cast<std::int32_t>(kHeaderVersion))));
}

class RealRuntime : public ::testing::TestWithParam<RuntimeKind> {
 protected:
  std::string path() const { return library_path(GetParam()); }
  std::string label_start() const {
    return std::string("TensorRT ") + std::to_string(NV_TENSORRT_MAJOR) + ".";
  }
  /// The library at path() loaded (library_) and a runtime made from it logging to recording_
  /// (runtime_); a fatal failure where either is missing.
  void make_recorded_runtime() {
    Result<std::shared_ptr<const RuntimeLibrary>> library = acquire_library(path());
    ASSERT_TRUE(library.ok()) << library.status().to_string();
    library_ = library.value();
    runtime_ = make_runtime(*library_, recording_);
    ASSERT_NE(runtime_, nullptr);
  }

  std::shared_ptr<const RuntimeLibrary> library_;
  RecordingLogger recording_;
  std::unique_ptr<nvinfer1::IRuntime> runtime_;  ///< destroyed before the logger it logs to
};

TEST_P(RealRuntime, LoadsAndReportsItsVersion) {
  REQUIRE_LIBRARY(path());
  Result<std::shared_ptr<const RuntimeLibrary>> library = acquire_library(path());
  ASSERT_TRUE(library.ok()) << library.status().to_string();
  const RuntimeLibrary& loaded = *library.value();
  EXPECT_EQ(loaded.version() / 10000, NV_TENSORRT_MAJOR);
  EXPECT_GE(loaded.version() / 100 % 100, NV_TENSORRT_MINOR);
  EXPECT_EQ(loaded.kind(), GetParam());  // from the file name
  EXPECT_EQ(loaded.label(), "TensorRT " + loaded.version_string() + " (" + to_string(GetParam()) + " runtime)");
  std::cout << "loaded " << loaded.label() << " from " << loaded.path() << " (getInferLibVersion " << loaded.version()
            << "; headers " << kHeaderVersion << ")\n";
  RecordProperty("library_version", loaded.version());
}

TEST_P(RealRuntime, CreatesARuntimeWithOurLogger) {
  REQUIRE_LIBRARY(path());
  TRTET_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(make_recorded_runtime());
  for (const auto& [severity, message] : recording_.messages()) {
    EXPECT_NE(severity, Severity::kERROR) << message;
    EXPECT_NE(severity, Severity::kINTERNAL_ERROR) << message;
  }
  EXPECT_EQ(runtime_->getLogger(), &recording_);
  EXPECT_GE(runtime_->getNbDLACores(), 0);
}

TEST_P(RealRuntime, EveryNonPlanIsAnInvalidProgramWithTensorRTsReason) {
  REQUIRE_LIBRARY(path());
  TRTET_REQUIRE_GPU();
  const blob::Metadata metadata;
  for (const NotAPlan& bad : not_plans()) {
    SCOPED_TRACE(bad.what);
    Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(bad.bytes, metadata, path()));
    ASSERT_FALSE(engine.ok());
    const Status status = engine.status();
    EXPECT_EQ(status.code(), ErrorCode::kInvalidProgram) << status.to_string();
    EXPECT_EQ(status.message().rfind(label_start(), 0), 0u) << "the message names the library's version: "
                                                             << status.message();
    TRTET_EXPECT_ERROR_SAYS(status, std::string("(") + to_string(GetParam()) + " runtime)");
    const std::string reason = tensorrt_reason(status.message());
    EXPECT_FALSE(reason.empty()) << "TensorRT's reason is missing: " << status.message();
    // The reason is what TensorRT logged as an error on this thread.
    EXPECT_EQ(last_error_suffix(), ": " + reason);
    std::cout << to_string(GetParam()) << ", " << bad.what << ": " << reason << "\n";
  }
}

TEST_P(RealRuntime, EmptyBytesAreRefusedBeforeTensorRT) {
  // No library or GPU needed: the adapter refuses before loading anything.
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> empty;
  Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(empty, metadata, path()));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR(engine, ErrorCode::kInvalidProgram, "holds no serialized TensorRT engine (0 bytes)");
}

TEST_P(RealRuntime, SeveritiesTensorRTLogsMapToOurLevels) {
  REQUIRE_LIBRARY(path());
  TRTET_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(make_recorded_runtime());
  const std::string junk = "not a plan";
  EXPECT_EQ(runtime_->deserializeCudaEngine(junk.data(), junk.size()), nullptr);
  const auto messages = recording_.messages();
  bool saw_error = false;
  for (const auto& [severity, message] : messages) {
    const std::optional<LogLevel> level = log_level_of(severity);
    switch (severity) {
      case Severity::kINTERNAL_ERROR:
      case Severity::kERROR: EXPECT_EQ(level, LogLevel::kError) << message; saw_error = true; break;
      case Severity::kWARNING: EXPECT_EQ(level, LogLevel::kWarning) << message; break;
      case Severity::kINFO: EXPECT_EQ(level, LogLevel::kDebug) << message; break;
      case Severity::kVERBOSE: EXPECT_EQ(level, std::nullopt) << message; break;
    }
    std::cout << "severity " << static_cast<int>(severity) << ": " << message << "\n";
  }
  EXPECT_TRUE(saw_error) << "TensorRT logged no error for bytes that are no plan";
}

TEST_P(RealRuntime, EightThreadsCreateRuntimesAtOnce) {
  REQUIRE_LIBRARY(path());
  TRTET_REQUIRE_GPU();
  constexpr int kThreads = 8;
  const blob::Metadata metadata;
  const std::string junk_text = "not a plan, from one of eight threads";
  const std::vector<std::uint8_t> junk(junk_text.begin(), junk_text.end());
  std::vector<std::string> failures(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::string& failure = failures[static_cast<std::size_t>(i)];
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      Result<std::shared_ptr<const RuntimeLibrary>> library = acquire_library(path());
      if (!library.ok()) {
        failure = library.status().to_string();
        return;
      }
      Logger& thread_logger = logger_for(library.value()->label());
      clear_last_error();
      std::unique_ptr<nvinfer1::IRuntime> runtime = make_runtime(*library.value(), thread_logger);
      if (runtime == nullptr || !last_error_suffix().empty()) {
        failure = "no runtime" + last_error_suffix();
        return;
      }
      // A failing engine load on every thread: each sees TensorRT's reason on its own thread.
      Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, path()));
      if (engine.ok() || engine.status().code() != ErrorCode::kInvalidProgram ||
          tensorrt_reason(engine.status().message()).empty()) {
        failure = "unexpected: " + (engine.ok() ? std::string("an engine") : engine.status().to_string());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(failures[static_cast<std::size_t>(i)], "") << "thread " << i;
}

TEST_P(RealRuntime, LoadsAndUnloadsAcrossSessions) {
  REQUIRE_LIBRARY(path());
  TRTET_REQUIRE_GPU();
  const blob::Metadata metadata;
  const std::string junk_text = "not a plan";
  const std::vector<std::uint8_t> junk(junk_text.begin(), junk_text.end());
  const int before = open_runtime_library_count();
  for (int session = 0; session < 3; ++session) {
    SCOPED_TRACE(session);
    {
      Result<std::shared_ptr<const RuntimeLibrary>> library = acquire_library(path());
      ASSERT_TRUE(library.ok()) << library.status().to_string();
      EXPECT_EQ(open_runtime_library_count(), before + 1);
      Logger& session_logger = logger_for(library.value()->label());
      std::unique_ptr<nvinfer1::IRuntime> runtime = make_runtime(*library.value(), session_logger);
      ASSERT_NE(runtime, nullptr);
      Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, path()));
      ASSERT_FALSE(engine.ok());
      EXPECT_EQ(engine.status().code(), ErrorCode::kInvalidProgram) << engine.status().to_string();
    }  // runtime destroyed, then the library released
    EXPECT_EQ(open_runtime_library_count(), before) << "the adapter still holds the library after the session";
    void* still = dlopen(path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    std::cout << "after session " << session << ": " << path()
              << (still != nullptr ? " stays mapped (the dynamic loader keeps it)" : " is unloaded") << "\n";
    if (still != nullptr) dlclose(still);
  }
}

INSTANTIATE_TEST_SUITE_P(LeanAndDispatch, RealRuntime, ::testing::Values(RuntimeKind::kLean, RuntimeKind::kDispatch),
                         [](const ::testing::TestParamInfo<RuntimeKind>& info) {
                           return std::string(to_string(info.param));
                         });

TEST(RealRuntimeChoice, MissingLibraryIsNotSupportedAndNamesTheSearch) {
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> bytes(64, 1);
  const std::string missing = "/nonexistent/" + runtime_file_name(RuntimeKind::kLean, NV_TENSORRT_MAJOR);
  Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(bytes, metadata, missing + ",libtrtet_none.so"));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR(engine, ErrorCode::kNotSupported,
                     "none of " + missing + " (path), libtrtet_none.so (path) was found",
                     "from load-time option tensorrt_runtime");
}

TEST(RealRuntimeChoice, TheOptionsFirstLoadableLibraryServes) {
  const std::string dispatch = library_path(RuntimeKind::kDispatch);
  REQUIRE_LIBRARY(dispatch);
  TRTET_REQUIRE_GPU();
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> junk(64, 7);
  Result<engine::EnginePtr> engine =
      make_tensorrt_engine(request_for(junk, metadata, "/nonexistent/libnvinfer_lean.so.1," + dispatch));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR_SAYS(engine, "(dispatch runtime) could not deserialize");
}

TEST(RealRuntimeChoice, TheEnvironmentAppliesWithoutAnOption) {
  const std::string lean = library_path(RuntimeKind::kLean);
  const std::string dispatch = library_path(RuntimeKind::kDispatch);
  REQUIRE_LIBRARY(lean);
  REQUIRE_LIBRARY(dispatch);
  TRTET_REQUIRE_GPU();
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> junk(64, 7);
  const char* previous = std::getenv(kRuntimeEnvironmentVariable);
  const std::string saved = previous != nullptr ? previous : "";
  ASSERT_EQ(setenv(kRuntimeEnvironmentVariable, dispatch.c_str(), 1), 0);
  Result<engine::EnginePtr> from_environment = make_tensorrt_engine(request_for(junk, metadata, std::nullopt));
  Result<engine::EnginePtr> from_option = make_tensorrt_engine(request_for(junk, metadata, lean));  // the option wins
  if (previous != nullptr) {
    setenv(kRuntimeEnvironmentVariable, saved.c_str(), 1);
  } else {
    unsetenv(kRuntimeEnvironmentVariable);
  }
  ASSERT_FALSE(from_environment.ok());
  TRTET_EXPECT_ERROR_SAYS(from_environment, "(dispatch runtime)");
  ASSERT_FALSE(from_option.ok());
  TRTET_EXPECT_ERROR_SAYS(from_option, "(lean runtime)");
}

// Engine host code: an engine the dispatch runtime would serve is refused without the
// application's load-time option allow_engine_host_code, and the refusal names the option; the
// dispatch library is not even loaded. With the option it serves (and TensorRT gives its reason).
TEST(RealRuntimeChoice, TheDispatchRuntimeWithoutTheOptionIsRefusedNamingIt) {
  const std::string dispatch = library_path(RuntimeKind::kDispatch);
  REQUIRE_LIBRARY(dispatch);
  TRTET_REQUIRE_GPU();
  const ScopedEnvironment no_environment(kAllowEngineHostCodeEnvironmentVariable, nullptr);
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> junk(64, 7);
  const int before = open_runtime_library_count();
  for (const std::optional<bool> option : {std::optional<bool>(), std::optional<bool>(false)}) {
    SCOPED_TRACE(option.has_value() ? "allow_engine_host_code=false" : "no option");
    for (const std::string& order : {dispatch, std::string("dispatch"), "/nonexistent/libnvinfer_lean.so.1," + dispatch}) {
      SCOPED_TRACE(order);
      Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, order, option));
      ASSERT_FALSE(engine.ok());
      TRTET_EXPECT_ERROR(engine, ErrorCode::kInvalidArgument, "allow_engine_host_code=true");
      EXPECT_EQ(open_runtime_library_count(), before) << "the dispatch runtime was loaded";
    }
  }
  // The environment variable, the application's too, allows it where no option is given.
  {
    const ScopedEnvironment allowed(kAllowEngineHostCodeEnvironmentVariable, "1");
    Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, dispatch, std::nullopt));
    ASSERT_FALSE(engine.ok());
    TRTET_EXPECT_ERROR_SAYS(engine, "(dispatch runtime) could not deserialize");
  }
  Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, dispatch, true));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR_SAYS(engine, "(dispatch runtime) could not deserialize", "engine host code is allowed");
}

// Without the option, the lean runtime is asked to refuse host code (TensorRT's default, said
// explicitly), and its deserialization errors say which option would allow plans that carry some.
TEST(RealRuntimeChoice, TheLeanRuntimeWithoutTheOptionRunsNoHostCode) {
  const std::string lean = library_path(RuntimeKind::kLean);
  REQUIRE_LIBRARY(lean);
  TRTET_REQUIRE_GPU();
  const ScopedEnvironment no_environment(kAllowEngineHostCodeEnvironmentVariable, nullptr);
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> junk(64, 7);
  Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, lean, std::nullopt));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR(engine, ErrorCode::kInvalidProgram,
                     "load only with the load-time option allow_engine_host_code=true");
}

TEST(RealRuntimeChoice, TheDefaultOrderFindsTheLeanRuntimeOnTheLoaderPath) {
  TRTET_REQUIRE_GPU();
  const std::string full = runtime_file_name(RuntimeKind::kFull, NV_TENSORRT_MAJOR);
  const std::string lean = runtime_file_name(RuntimeKind::kLean, NV_TENSORRT_MAJOR);
  void* full_handle = dlopen(full.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (full_handle != nullptr) {
    dlclose(full_handle);
    GTEST_SKIP() << "the full runtime " << full << " is installed: the default order takes it";
  }
  void* lean_handle = dlopen(lean.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lean_handle == nullptr) GTEST_SKIP() << lean << " is not on the loader's path (LD_LIBRARY_PATH): " << dlerror();
  dlclose(lean_handle);
  if (std::getenv(kRuntimeEnvironmentVariable) != nullptr && *std::getenv(kRuntimeEnvironmentVariable) != '\0') {
    GTEST_SKIP() << kRuntimeEnvironmentVariable << " is set";
  }
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> junk(64, 7);
  Result<engine::EnginePtr> engine = make_tensorrt_engine(request_for(junk, metadata, std::nullopt));
  ASSERT_FALSE(engine.ok());
  TRTET_EXPECT_ERROR_SAYS(engine, "(lean runtime) could not deserialize");
}

TEST(RealRuntimeChoice, TheFactoryIsInstalledAtLoad) {
  // The backend library installed make_tensorrt_engine when it was loaded (no other factory was set).
  const EngineFactory factory = engine_factory();
  ASSERT_TRUE(static_cast<bool>(factory));
  const blob::Metadata metadata;
  const std::vector<std::uint8_t> bytes(16, 0);
  Result<engine::EnginePtr> engine = factory(request_for(bytes, metadata, std::string("/nonexistent/libx.so")));
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), ErrorCode::kNotSupported) << engine.status().to_string();
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
