#include "engine/engine_factory.h"

#include <mutex>
#include <utility>

namespace torch_tensorrt::executorch_backend {
namespace {

std::mutex& factory_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// Starts empty; the TensorRT adapter, where built, installs itself from its own static
/// initializer (src/tensorrt), so this layer does not depend on it.
EngineFactory& installed_factory() {
  static EngineFactory factory;
  return factory;
}

}  // namespace

int engine_api_version() noexcept { return kEngineApiVersion; }

EngineFactory set_engine_factory(EngineFactory factory) {
  std::lock_guard<std::mutex> lock(factory_mutex());
  return std::exchange(installed_factory(), std::move(factory));
}

EngineFactory engine_factory() {
  std::lock_guard<std::mutex> lock(factory_mutex());
  return installed_factory();
}

}  // namespace torch_tensorrt::executorch_backend
