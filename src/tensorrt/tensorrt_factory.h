// The TensorRT engine factory: what a host (the ExecuTorch backend) calls to build an engine from a blob.
//
// Loading the library installs make_tensorrt_engine as the process's engine factory unless one is
// already installed (engine/engine_factory.h), so programs exported by Torch-TensorRT run with no
// setup. The factory slot belongs to the engine seam: the adapter knows no host.
#pragma once

#include "common/status.h"
#include "engine/engine.h"
#include "engine/engine_factory.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// A TensorRTEngine for `request` (TensorRTEngine::create; its errors).
Result<engine::EnginePtr> make_tensorrt_engine(const EngineRequest& request);

/// Installs make_tensorrt_engine as the engine factory when none is installed; true when it did.
/// Called once at load time; callable again, e.g. by a test that removed the factory.
bool install_default_engine_factory();

}  // namespace torch_tensorrt::executorch_backend::tensorrt
