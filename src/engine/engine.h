// The engine seam: what the delegate needs from an inference engine (engine::Engine, IoDesc,
// ShapeBounds, Alias, EnginePtr). Defined once, in the public engine API
// (torch_tensorrt/executorch/Engine.h), so an application's own engine implements the same class
// the delegate runs; shaped after the subset of TensorRT's IExecutionContext the delegate uses, so
// the TensorRT adapter is a thin translation, and tests implement it with CUDA kernels.
#pragma once

#include <torch_tensorrt/executorch/Engine.h>

#include "common/status.h"
#include "engine/types.h"
