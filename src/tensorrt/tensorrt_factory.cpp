#include "tensorrt/tensorrt_factory.h"

#include <memory>
#include <utility>

#include "common/log.h"
#include "tensorrt/tensorrt_engine.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

Result<engine::EnginePtr> make_tensorrt_engine(const EngineRequest& request) {
  TRTET_ASSIGN_OR_RETURN(std::unique_ptr<TensorRTEngine> engine, TensorRTEngine::create(request));
  return engine::EnginePtr(std::move(engine));
}

bool install_default_engine_factory() {
  // Check, then install: the load-time call runs during static initialization, before any thread
  // of the library's users can install a factory of their own.
  if (engine_factory()) return false;
  set_engine_factory(&make_tensorrt_engine);
  log(LogLevel::kDebug, "TensorRT engine factory installed");
  return true;
}

namespace {
/// Installs the factory when the shared library is loaded.
[[maybe_unused]] const bool kInstalledAtLoad = install_default_engine_factory();
}  // namespace

}  // namespace torch_tensorrt::executorch_backend::tensorrt
