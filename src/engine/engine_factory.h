// Where engines come from: one process-wide factory, settable (EngineRequest, EngineFactory,
// set_engine_factory, engine_factory, ScopedEngineFactory). Part of the engine seam, so an engine
// adapter (src/tensorrt) installs itself without knowing which runtime hosts it; defined in the
// public engine API (torch_tensorrt/executorch/Engine.h), so applications install their own.
//
// The host (the ExecuTorch backend's init()) hands the factory the engine bytes of a processed
// blob, the blob's metadata, the weight-streaming budget and the runtime-library choice; the
// factory returns an engine whose bindings follow the blob's io_bindings order. The TensorRT
// adapter installs itself as the default where it is built; tests install their own. Without a
// factory, the ExecuTorch backend's init() fails with kNotSupported.
#pragma once

#include <torch_tensorrt/executorch/Engine.h>

#include "blob/format.h"
#include "common/status.h"
#include "engine/engine.h"
