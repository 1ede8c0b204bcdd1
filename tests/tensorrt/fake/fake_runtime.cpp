// The fake library's entry points (createInferRuntime_INTERNAL, getInferLibVersion, the stats hooks)
// and its IRuntime.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "fake/fake_stats.h"
#include "fake/fake_tensorrt.h"

#define TRTET_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace trtet_fake {
namespace {

TrtetFakeStats g_stats = [] {
  TrtetFakeStats stats{};
  stats.host_code_allowed = -1;
  return stats;
}();

std::atomic<TrtetFakeFaultHook> g_fault_hook{nullptr};

}  // namespace

bool hook_fails(const char* api) {
  const TrtetFakeFaultHook hook = g_fault_hook.load(std::memory_order_acquire);
  return hook != nullptr && hook(api) != 0;
}

void log_error(nvinfer1::ILogger* logger, const std::string& message) {
  if (logger != nullptr) logger->log(nvinfer1::ILogger::Severity::kERROR, ("fake TensorRT: " + message).c_str());
}

Runtime::Runtime(nvinfer1::ILogger* logger) : impl_(this, logger) {
  mImpl = &impl_;
  count(g_stats.runtimes_created);
}

Runtime::~Runtime() noexcept { count(g_stats.runtimes_destroyed); }

nvinfer1::ICudaEngine* RuntimeImpl::deserializeCudaEngine(void const* blob, std::size_t size) noexcept {
  Plan plan;
  std::string error;
  if (!parse_plan(blob, size, plan, error)) {
    log_error(logger_, "deserializeCudaEngine: " + error);
    return nullptr;
  }
  if (plan.fails("deserialize")) {
    log_error(logger_, "deserializeCudaEngine: injected failure");
    return nullptr;
  }
  if (hook_fails("deserializeCudaEngine")) {
    log_error(logger_, "deserializeCudaEngine: injected fault");
    return nullptr;
  }
  if (plan.host_code && !host_code_allowed_) {
    log_error(logger_, "deserializeCudaEngine: the plan carries host code, which this runtime is not allowed to run");
    return nullptr;
  }
  return new (std::nothrow) Engine(logger_, std::move(plan));
}

nvinfer1::IPluginRegistry& RuntimeImpl::getPluginRegistry() noexcept {
  std::fprintf(stderr, "fake TensorRT: getPluginRegistry is not implemented\n");
  std::abort();
}

void RuntimeImpl::setEngineHostCodeAllowed(bool allowed) noexcept {
  host_code_allowed_ = allowed;
  g_stats.host_code_allowed = allowed ? 1 : 0;
}

TrtetFakeStats& stats() { return g_stats; }

}  // namespace trtet_fake

TRTET_FAKE_EXPORT int32_t getInferLibVersion() noexcept { return NV_TENSORRT_VERSION; }

TRTET_FAKE_EXPORT void* createInferRuntime_INTERNAL(void* logger, int32_t version) noexcept {
  auto* sink = static_cast<nvinfer1::ILogger*>(logger);
  if (version / 10000 != NV_TENSORRT_MAJOR) {
    trtet_fake::log_error(sink, "createInferRuntime: headers of version " + std::to_string(version) +
                                    " cannot use this TensorRT " + std::to_string(NV_TENSORRT_VERSION));
    return nullptr;
  }
  if (trtet_fake::hook_fails("createInferRuntime")) {
    trtet_fake::log_error(sink, "createInferRuntime: injected fault");
    return nullptr;
  }
  if (sink != nullptr) {
    sink->log(nvinfer1::ILogger::Severity::kVERBOSE, "fake TensorRT: creating a runtime");
    sink->log(nvinfer1::ILogger::Severity::kINFO, "fake TensorRT: runtime created");
  }
  return static_cast<nvinfer1::IRuntime*>(new (std::nothrow) trtet_fake::Runtime(sink));
}

TRTET_FAKE_EXPORT TrtetFakeStats* trtet_fake_stats() { return &trtet_fake::stats(); }

TRTET_FAKE_EXPORT void trtet_fake_reset_stats() {
  trtet_fake::stats() = TrtetFakeStats{};
  trtet_fake::stats().host_code_allowed = -1;
}

TRTET_FAKE_EXPORT void trtet_fake_set_fault_hook(TrtetFakeFaultHook hook) {
  trtet_fake::g_fault_hook.store(hook, std::memory_order_release);
}
