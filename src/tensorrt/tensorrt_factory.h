// The TensorRT engine factory: what the ExecuTorch backend calls to build an engine from a blob.
//
// Where the ExecuTorch backend is built too (TRTET_HAVE_EXECUTORCH), loading the library installs
// make_tensorrt_engine as the process's engine factory unless one is already installed
// (executorch/engine_factory.h), so programs exported by Torch-TensorRT run with no setup.
#pragma once

#include "common/status.h"
#include "engine/engine.h"
#include "executorch/engine_factory.h"

namespace torch_tensorrt::executorch_backend::tensorrt {

/// A TensorRTEngine for `request` (TensorRTEngine::create; its errors).
Result<engine::EnginePtr> make_tensorrt_engine(const EngineRequest& request);

/// Installs make_tensorrt_engine as the engine factory when none is installed; true when it did.
/// Without the ExecuTorch backend (no TRTET_HAVE_EXECUTORCH) there is no factory slot: false.
/// Called once at load time; callable again, e.g. by a test that removed the factory.
bool install_default_engine_factory();

}  // namespace torch_tensorrt::executorch_backend::tensorrt
